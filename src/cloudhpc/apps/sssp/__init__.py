"""sssp: single-source shortest paths (Bellman-Ford in supersteps), a vertex program on the bsp
model (seed 002's Giraph model): non-negative weights from the third column (1 when absent),
inf for unreachable vertices. --check: scipy.sparse.csgraph.dijkstra (reference.py)."""
