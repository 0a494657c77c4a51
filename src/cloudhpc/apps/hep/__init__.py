"""hep: map-reduce histogramming of HEP events (000 section 12.4.2)."""
