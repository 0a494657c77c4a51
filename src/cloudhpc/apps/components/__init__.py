"""components: connected components of an undirected graph by HashMin, a vertex program on the
bsp model (seed 002's Giraph model): each vertex's value becomes the smallest vertex id in its
component. --check: scipy.sparse.csgraph.connected_components (reference.py)."""
