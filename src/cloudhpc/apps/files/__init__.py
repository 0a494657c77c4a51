"""files: CAP3-style map-only, an external program run once per input file (000 12.4.1)."""
