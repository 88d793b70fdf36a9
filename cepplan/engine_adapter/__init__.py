"""Plan -> evaluation, in three parts: `runtime/` (the stage code both engines run), `local/`
(the in-process engine) and `spark/` (the generated PySpark job, its stages, submit and JVM
start); beside them the run's inputs, the job's data and the metrics table both share."""
