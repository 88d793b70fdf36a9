"""Shared fixtures: one real local SparkSession for the whole test session (`local[2]`), and
the hypothesis profile every property test runs under; every JVM the tests start compiles with
the client compiler only, as `cepplan run --engine spark` starts its own; the xdist groups
that keep each test file on one worker and start the SparkSession and the shared server once;
and the order the groups are handed out in, Java first (tests/xdist_order.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from cepplan.engine_adapter.spark.jvm_start import FAST_JIT

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"

# No deadline and no "too slow" health check: the suite must pass on a machine at load 8, where
# one example may take many times its idle time; each test sets only its max_examples.
settings.register_profile("cepplan", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("cepplan")

# spark-submit passes SPARK_SUBMIT_OPTS to the JVM it starts: the session below, `cepplan stats
# --engine spark`, the spark-submit of the README and the other tests' own. A test's Spark work
# is short, and the optimizing compiler's start-up would be about 40 % of each JVM's CPU time.
os.environ["SPARK_SUBMIT_OPTS"] = " ".join(
    filter(None, [os.environ.get("SPARK_SUBMIT_OPTS"), FAST_JIT]))


# Session fixtures that take seconds to start (a JVM; a server with its workers).
EXPENSIVE_FIXTURES = ("spark", "server")


def pytest_configure(config):
    config.addinivalue_line("markers", "own_jvm: the file's tests start Java of their own "
                            "(spark-submit, `--engine spark`); its group is handed out first")


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which names each test's group from it
def pytest_collection_modifyitems(config, items):
    """Under `--dist loadgroup`, each test file runs whole on one worker (its module fixtures
    are built once), and the files using an expensive session fixture all on one worker, which
    starts it once. A test that asks for one by name (`request.getfixturevalue`) marks itself
    with its group; a file whose tests start Java of their own is marked `own_jvm`."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    from tests.xdist_order import OWN_JVM

    groups: dict[str, str] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        marked = item.get_closest_marker("xdist_group")
        used = [name for name in EXPENSIVE_FIXTURES if name in item.fixturenames]
        if marked or used:
            groups[module] = marked.args[0] if marked else used[0]
        own_jvm = item.get_closest_marker("own_jvm") is not None
        groups.setdefault(module, OWN_JVM + module if own_jvm else module)
    for item in items:
        item.add_marker(pytest.mark.xdist_group(groups[item.nodeid.split("::")[0]]))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup` hands the groups that start Java out first (tests/xdist_order.py)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from tests.xdist_order import JavaFirstScheduling

    return JavaFirstScheduling(config, log)


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
