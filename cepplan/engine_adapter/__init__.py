"""Plan -> generated PySpark job, and the matcher runtime it carries (seed 001)."""
