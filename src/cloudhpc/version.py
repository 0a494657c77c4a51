"""cloudhpc's version, in a module of its own: the package's __init__ is the public API, which no
module below it imports."""

__version__ = "0.1.0"
