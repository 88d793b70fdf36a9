"""The Spark engine: the generated PySpark job and its stages, covering on Spark, submit, and
the JVM start-up options (docs/engine.md)."""
