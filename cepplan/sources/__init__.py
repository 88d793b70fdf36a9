"""Reading the events a workload's `source` describes, in-process: files, compression and text
lines, time stamps as the input writes them, rows cast to the declared attribute types. The
statistics and both engines read through it (the Spark reader is `workload/spark_source.py`)."""
