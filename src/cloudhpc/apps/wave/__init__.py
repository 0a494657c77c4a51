"""wave: the concurrent wave equation of Table 12.5 (000 section 12.6)."""
