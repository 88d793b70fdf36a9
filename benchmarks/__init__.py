"""cepplan's benchmarks: `python -m benchmarks` runs them all (see benchmarks/README.md)."""
