"""What the graph apps (pagerank, components, sssp) share: their options (options.py), edge-list
input in TSV/CSV, Parquet or .npy (inputs.py), generated graphs (generate.py: R-MAT, Erdos-Renyi),
value output (.npy / Parquet) and the job every one of them runs on the bsp model (job.py)."""
