"""OSU / IMB-style MPI micro-benchmarks (point-to-point and collectives)."""
