"""pagerank: PageRank as a vertex program on the bsp model (seed 002's Giraph model; the
networkx.pagerank definition: damping, dangling vertices' rank spread uniformly, values summing
to 1, stop when the L1 change falls below V * tol or after --iterations). --check: power
iteration with scipy.sparse in one process (reference.py)."""
