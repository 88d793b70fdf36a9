"""`cepplan synth` then `cepplan stats` as a user runs them (one Spark subprocess), and the
errors that must come back as exit code 2 without a traceback."""

from __future__ import annotations

import subprocess
import sys

import orjson

from cepplan.stats.stats_file import read_stats, schema_problems
from cepplan.workload import load_workload
from tests.conftest import EXAMPLES

STOCKS = EXAMPLES / "stocks" / "workload.json"


def _cepplan(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from cepplan.cli.app import main; main()",
                           *args], capture_output=True, text=True, timeout=600)


def test_synth_then_stats(tmp_path):
    events = tmp_path / "events.csv"
    done = _cepplan("synth", str(STOCKS), "-o", str(events), "--duration", "3000",
                    "--seed", "4", "--markov", "GOOG=0.1,0.8", "--truth-draws", "20000")
    assert done.returncode == 0, done.stderr
    truth = orjson.loads((tmp_path / "events.truth.json").read_bytes())
    assert truth["models"]["GOOG"]["kind"] == "markov"
    out = tmp_path / "stats.json"
    done = _cepplan("stats", str(events), "--workload", str(STOCKS), "-o", str(out),
                    "--master", "local[2]", "--driver-memory", "1g")
    assert done.returncode == 0, done.stderr
    assert "rows read" in done.stdout and "GOOG" in done.stdout
    document = orjson.loads(out.read_bytes())
    assert schema_problems(document, str(out)) == []
    assert document["models"]["GOOG"]["kind"] == "markov"
    statistics = read_stats(out, load_workload(STOCKS))
    for name, rate in truth["rates"].items():
        assert abs(statistics.rates[name] - rate) / rate < 0.1


def test_errors_exit_2_without_traceback(tmp_path):
    missing = _cepplan("stats", str(tmp_path / "nope.csv"), "-w", str(STOCKS),
                       "-o", str(tmp_path / "s.json"))
    assert missing.returncode == 2
    assert "no such file or directory" in missing.stderr and "Traceback" not in missing.stderr
    bad_chain = _cepplan("synth", str(STOCKS), "-o", str(tmp_path / "e.csv"),
                         "--markov", "GOOG=0.1,0.8,0.3")
    assert bad_chain.returncode == 2 and "probabilities" in bad_chain.stderr
    assert not (tmp_path / "e.csv").exists()
