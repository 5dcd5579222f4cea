"""reportbench: a data-versioned benchmark harness for deep-research systems."""

__version__ = "0.1.0"
