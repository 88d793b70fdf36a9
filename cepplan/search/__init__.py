"""Multi-pattern local search (seed 004 §4-5)."""
