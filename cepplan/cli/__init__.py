"""The `cepplan` command line (Typer)."""
