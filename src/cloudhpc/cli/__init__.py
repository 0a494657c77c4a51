"""The `cloudhpc` command: thin argument parsing over the library."""
