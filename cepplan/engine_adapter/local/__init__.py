"""The in-process engine: the Spark job's stages over pyarrow batches, no JVM (docs/matching.md)."""
