"""The workloads cloudhpc runs; see registry.py."""
