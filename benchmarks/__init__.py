"""cepplan's benchmarks: `python -m benchmarks` runs them all (see benchmarks/README.md)."""

import cepplan  # noqa: F401  (first: its allocator setting must precede pandas and pyarrow)
