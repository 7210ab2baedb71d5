"""Resolute benchmarks: `python benchmarks/run.py` (see benchmarks/README.md)."""
