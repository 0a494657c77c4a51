"""`cloudhpc report`: records -> one self-contained HTML file (charts, tables, provenance)."""
