"""The class archive for a fast Spark start: written once (moved into place only after a job
that succeeded), then used; off with CEPPLAN_SPARK_CDS=0."""

from __future__ import annotations

import pytest

from cepplan.engine_adapter.spark.jvm_start import class_archive

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)


def test_written_once_then_used(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CEPPLAN_SPARK_CDS", raising=False)
    first = class_archive()
    if first.path is None:
        pytest.fail("no java found: spark-submit could not run either")
    assert first.options == [f"-XX:ArchiveClassesAtExit={first.writing}"]
    first.writing.write_bytes(b"archive")  # what the JVM writes at exit
    first.keep(succeeded=True)
    later = class_archive()
    assert later.writing is None and later.path == first.path
    assert later.options == [f"-XX:SharedArchiveFile={first.path}"]
    assert first.path.read_bytes() == b"archive"


def test_failed_job_leaves_no_archive(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("CEPPLAN_SPARK_CDS", raising=False)
    first = class_archive()
    first.writing.write_bytes(b"half written")
    first.keep(succeeded=False)
    assert not first.writing.exists() and not first.path.exists()
    assert class_archive().writing is not None


def test_turned_off(monkeypatch):
    monkeypatch.setenv("CEPPLAN_SPARK_CDS", "0")
    assert class_archive().options == []
