"""Canonical column names of an event table, shared by synth, stats, simulator and runtime.

Standalone (no imports) so the generated Spark job can ship it. Attribute columns keep their
own names; attribute names cannot begin with `__`, so these never collide with them.
"""

EVENT_TYPE = "__type"  # the event type name (str)
EVENT_TS = "__ts"  # the timestamp in the workload's time_unit (float64); `var.ts` reads it
EVENT_ID = "__id"  # the event id (int64): the id column, or the row's position in the input
