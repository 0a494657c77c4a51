"""The append-only store of run records (store.py) and what goes into a record (provenance.py)."""
