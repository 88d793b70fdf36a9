"""Spark's native filters (`spark.expr`, the job's push-down) on whole numbers near the 64-bit
limits, against the reference evaluator: exact where int64 would wrap around (and where
Spark's ANSI mode failed the job with an overflow)."""

from __future__ import annotations

from pyspark.sql import types as T

from cepplan.engine_adapter.spark.expr import attribute_resolver, column_of
from cepplan.workload.expr.evaluate import holds
from cepplan.workload.expr.parser import parse
from cepplan.workload.expr.portable import to_portable

FILTERS = ["a.n * 4 < 0", "-a.n > 0", "abs(a.n) > 922337203685477580 * 10", "a.n + 1 > a.n",
           "a.n - 1 < a.n", "a.n * a.n > 0", "a.n * 2 / 2 == a.n", "min(a.n * 2, 0) < 0",
           "max(a.n - 3, 1.5) > 2", "a.n == 9223372036854775807.0", "a.n * 3 > 9.2e18",
           "(a.n + a.n) - a.n == a.n", "a.n % 7 >= 0"]
VALUES = [2**63 - 1, 2**63 - 2, -2**63, -2**63 + 1, 2**62, 0, 5, -5]


def test_native_filters_near_the_limits_equal_the_reference(spark):
    frame = spark.createDataFrame([(v,) for v in VALUES],
                                  T.StructType([T.StructField("n", T.LongType())]))
    resolve = attribute_resolver({"n": "long"}, "__ts")
    columns = [column_of(to_portable(parse(text)), resolve).alias(str(i))
               for i, text in enumerate(FILTERS)]
    rows = frame.select("n", *columns).collect()
    for i, text in enumerate(FILTERS):
        tree = parse(text)
        got = [row[str(i)] for row in rows]
        expected = [holds(tree, {"a": {"n": row["n"]}}) for row in rows]
        assert got == expected, text
