"""Canonical column names of an event table, shared by synth, stats, simulator and runtime.

Standalone (no imports) so the generated Spark job can ship it. Attribute columns keep their
own names; attribute names cannot begin with `__`, so these never collide with them.
"""

EVENT_TYPE = "__type"  # the event type name (str)
EVENT_TS = "__ts"  # the timestamp in the workload's time_unit (float64); `var.ts` reads it
EVENT_ID = "__id"  # the event id (int64): the id column, or the row's position in the input
EVENT_ZONE = "__zone"  # the zone offset its time was written with (seconds east of UTC, int32)


def merged_attribute_types(declared) -> dict[str, str]:
    """One type per attribute name over the event types' declared attributes (an iterable of
    name -> type maps): the declared type, or double (long/double) or string if they disagree."""
    merged = {}
    for attrs in declared:
        for name, kind in attrs.items():
            old = merged.get(name, kind)
            if old != kind:
                kind = "double" if {old, kind} <= {"double", "long"} else "string"
            merged[name] = kind
    return merged
