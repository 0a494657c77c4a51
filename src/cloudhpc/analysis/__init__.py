"""Metrics, reports and plots derived from result records (never by re-running anything)."""
