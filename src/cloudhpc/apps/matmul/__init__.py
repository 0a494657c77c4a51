"""matmul: C = A B by Cannon's algorithm (MPI) or iterative map-reduce (000 12.4.3)."""
