"""Shared fixtures: one real local SparkSession for the whole test session (`local[2]`), and
the hypothesis profile every property test runs under."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# No deadline and no "too slow" health check: the suite must pass on a machine at load 8, where
# one example may take many times its idle time; each test sets only its max_examples.
settings.register_profile("cepplan", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("cepplan")


@pytest.fixture(scope="session")
def spark():
    """A real local SparkSession, started once; Spark tests share it."""
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("cepplan-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
