"""`cepplan synth` then `cepplan stats` as a user runs them (one Spark subprocess, which prints
nothing but cepplan's lines), and the errors that must come back as exit code 2 without a
traceback."""

from __future__ import annotations

import re
import subprocess
import sys

import orjson
import pytest

from cepplan.stats.stats_file import read_stats, schema_problems
from cepplan.workload import load_workload
from tests.conftest import EXAMPLES
from tests.in_process import cepplan

pytestmark = pytest.mark.own_jvm  # handed out first (tests/xdist_order.py)

STOCKS = EXAMPLES / "stocks" / "workload.json"


def _child(*args: str) -> subprocess.CompletedProcess:
    """`cepplan ARGS` in a child process: what the JVM it starts prints reaches its stderr."""
    return subprocess.run([sys.executable, "-c", "from cepplan.cli.app import main; main()",
                           *args], capture_output=True, text=True, timeout=600)


def test_synth_then_stats(tmp_path):
    events = tmp_path / "events.csv"
    done = cepplan("synth", str(STOCKS), "-o", str(events), "--duration", "3000",
                    "--seed", "4", "--markov", "GOOG=0.1,0.8", "--truth-draws", "20000")
    assert done.returncode == 0, done.stderr
    truth = orjson.loads((tmp_path / "events.truth.json").read_bytes())
    assert truth["models"]["GOOG"]["kind"] == "markov"
    out = tmp_path / "stats.json"
    done = _child("stats", str(events), "--workload", str(STOCKS), "-o", str(out),
                  "--master", "local[2]", "--driver-memory", "1g")
    assert done.returncode == 0, done.stderr
    assert "rows read" in done.stdout and "GOOG" in done.stdout
    # without -v, only cepplan's lines: none of the JVM's start-up warnings or Spark's log
    assert done.stderr == ""
    assert not re.search(r"WARN|INFO|log4j|incubator|^\d\d/\d\d/\d\d ", done.stdout, re.M)
    document = orjson.loads(out.read_bytes())
    assert schema_problems(document, str(out)) == []
    assert document["models"]["GOOG"]["kind"] == "markov"
    statistics = read_stats(out, load_workload(STOCKS))
    for name, rate in truth["rates"].items():
        assert abs(statistics.rates[name] - rate) / rate < 0.1


def test_local_engine_on_the_fraud_example(tmp_path):
    fraud = EXAMPLES / "fraud"
    out = tmp_path / "stats.json"
    done = cepplan("stats", str(fraud / "events.csv"), "-w", str(fraud / "workload.json"),
                    "-o", str(out))  # auto: a small local file runs in-process
    assert done.returncode == 0, done.stderr
    assert "in-process engine" in done.stdout and "7,851 rows read" in done.stdout
    document = orjson.loads(out.read_bytes())
    assert document["provenance"]["engine"] == "local"
    assert document["types"]["Swipe"]["count"] + document["types"]["Login"]["count"] > 7000
    assert schema_problems(document, str(out)) == []
    bad = tmp_path / "bad.csv"
    bad.write_text("event,ts,user\nLogin,1,u1\n")
    done = cepplan("stats", str(bad), "-w", str(fraud / "workload.json"), "-o", str(out),
                    "--engine", "local")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "'device'" in done.stderr and str(bad) in done.stderr
    done = cepplan("stats", str(bad), "-w", str(fraud / "workload.json"), "-o", str(out),
                    "--engine", "fast")
    assert done.returncode == 2 and "--engine" in done.stderr


def test_errors_exit_2_without_traceback(tmp_path):
    missing = cepplan("stats", str(tmp_path / "nope.csv"), "-w", str(STOCKS),
                       "-o", str(tmp_path / "s.json"))
    assert missing.returncode == 2
    assert "no such file or directory" in missing.stderr and "Traceback" not in missing.stderr
    bad_chain = cepplan("synth", str(STOCKS), "-o", str(tmp_path / "e.csv"),
                         "--markov", "GOOG=0.1,0.8,0.3")
    assert bad_chain.returncode == 2 and "probabilities" in bad_chain.stderr
    assert not (tmp_path / "e.csv").exists()
