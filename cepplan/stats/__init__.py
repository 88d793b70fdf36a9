"""Statistics collector (Spark) and synthetic stream generator (seed 002 §4, seed 004 §2)."""
