"""kmeans: Lloyd's algorithm as iterative map-reduce or hand-written MPI (000 12.4.3, 12.6)."""
