"""Command-line values that make no sense are refused where they enter, before any work: exit 2,
one line naming the option and the problem (never an OverflowError, a huge allocation or a
silently accepted nonsense value)."""

from __future__ import annotations

import pytest

W = "{w}"  # the workload path, filled in per case

SYNTH = [
    (["--rate", "Login=nan"], "--rate", "finite"),
    (["--rate", "Login=inf"], "--rate", "finite"),
    (["--rate", "Login=-1"], "--rate", "at least 0"),
    (["--rate", "Login=1e308"], "--rate", "at most"),
    (["--rate", "Login=fast"], "--rate", "not a number"),
    (["--rate", "Login"], "--rate", "TYPE=VALUE"),
    (["--rate", "Nobody=1"], "--rate", "unknown event type"),
    (["--duration", "inf"], "--duration", "finite"),
    (["--duration", "nan"], "--duration", "finite"),
    (["--duration", "1e12"], "--duration", "events"),
    (["--duration", "1e300"], "--duration", "largest duration"),
    (["--duration", "-5"], "--duration", "positive"),
    (["--duration", "0"], "--duration", "positive"),
    (["--total-rate", "1e308"], "--total-rate", "at most"),
    (["--total-rate", "nan"], "--total-rate", "finite"),
    (["--time-step", "0"], "--time-step", "positive"),
    (["--skew", "inf"], "--skew", "finite"),
    (["--range", "amount=5:1"], "--range", "LOW must be below HIGH"),
    (["--range", "amount=nan:1"], "--range", "finite"),
    (["--range", "amount=0:inf"], "--range", "finite"),
    (["--keys", "0"], "--keys", "from 1"),
    (["--regions", "-2"], "--regions", "from 1"),
    (["--truth-draws", "0"], "--truth-draws", "from 1"),
    (["--truth-draws", "1000000000000"], "--truth-draws", "from 1"),
    (["--keys", str(10**21)], "--keys", "to 1000000"),
    (["--regions", str(10**21)], "--regions", "to 1000000"),
    (["--truth-draws", str(10**21)], "--truth-draws", "from 1"),
    (["--seed", str(10**21)], "--seed", "not in the range"),
    (["--markov", "Login=0.5,2"], "--markov", "probabilities"),
    (["--markov", "Login=0.5,0.5,0.5"], "--markov", "probabilities"),
    (["--markov", "Login=0.1,0.2", "--time-step", "1e-9"], "--duration", "events"),
]


@pytest.mark.parametrize(("extra", "option", "fragment"), SYNTH,
                         ids=[" ".join(c[0]) for c in SYNTH])
def test_synth_option_refused(cli, fraud, extra, option, fragment):
    out = fraud / "new.csv"
    result = cli("synth", fraud / "workload.json", "-o", out, "--quiet", *extra)
    result.one_error(option, fragment)
    assert not out.exists() and not (fraud / "new.truth.json").exists()


OPTIMIZE = [
    (["--time-limit", "-1"], "--time-limit", "at least 0.001"),
    (["--time-limit", "0"], "--time-limit", "at least 0.001"),
    (["--time-limit", "5e-324"], "--time-limit", "at least 0.001"),  # was: blamed on --search
    (["--covering-time-limit", "5e-324"], "--covering-time-limit", "at least 0.001"),
    (["--time-limit", "nan"], "--time-limit", "finite"),
    (["--time-limit", "inf"], "--time-limit", "finite"),
    (["--time-limit", "1e300"], "--time-limit", "at most"),
    (["--k", "-3"], "-k", "from 0 to 1000"),
    (["-k", str(10**21)], "-k", "from 0 to 1000"),  # was: orjson's TypeError writing the plan
    (["-k", "1001"], "-k", "from 0 to 1000"),
    (["--dp-limit", str(10**21)], "--dp-limit", "to 30"),
    (["--seed", str(10**21)], "--seed", "not in the range"),
    (["--dp-limit", "0"], "--dp-limit", "from 1"),
    (["--dp-limit", "64"], "--dp-limit", "to 30"),
    (["--time-step", "-1"], "--time-step", "positive"),
    (["--time-step", "nan"], "--time-step", "finite"),
    (["--solver", "genetic"], "--solver", "not one of"),
    (["--strategy", "vibes"], "--strategy", "not one of"),
]


@pytest.mark.parametrize(("extra", "option", "fragment"), OPTIMIZE,
                         ids=[" ".join(c[0]) for c in OPTIMIZE])
def test_optimize_option_refused(cli, fraud, extra, option, fragment):
    out = fraud / "plan.json"
    result = cli("optimize", fraud / "workload.json", "-o", out, "--quiet", *extra)
    result.one_error(option, fragment)
    assert not out.exists()


STATS = [
    (["--markov-order", "0"], "--markov-order", "from 1"),
    (["--markov-order", "9"], "--markov-order", "to 8"),
    (["--markov-order", str(10**21)], "--markov-order", "to 8"),
    (["--sample", "0"], "--sample", "from 1"),
    (["--sample", str(10**21)], "--sample", "to 10000000"),  # was: orjson's TypeError
    (["--max-groups", "0"], "--max-groups", "from 1"),
    (["--max-groups", str(10**21)], "--max-groups", "to 1000000"),  # was: orjson's TypeError
    (["--shuffle-partitions", "-1"], "--shuffle-partitions", "from 0"),
    (["--shuffle-partitions", str(10**21)], "--shuffle-partitions",
     "to 100000"),  # was: Spark's IllegalArgumentException (32-bit setting)
    (["--seed", str(10**21)], "--seed", "not in the range"),
    (["--time-step", "nan"], "--time-step", "positive"),
    (["--time-step", "-3s"], "--time-step", "cannot read duration"),
    (["--time-step", "1e300"], "--time-step", "longer than"),
]


@pytest.mark.parametrize(("extra", "option", "fragment"), STATS,
                         ids=[" ".join(c[0]) for c in STATS])
def test_stats_option_refused_before_spark(cli, fraud, extra, option, fragment):
    out = fraud / "stats.json"
    result = cli("stats", fraud / "events.csv", "-w", fraud / "workload.json", "-o", out,
                 "--quiet", *extra)
    result.one_error(option, fragment)
    assert not out.exists()


def test_run_format_refused(cli, fraud, tmp_path):
    plan = tmp_path / "plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", plan, "--quiet").code == 0
    result = cli("run", plan, "--events", fraud / "events.csv", "--out", tmp_path / "out",
                 "--format", "xml")
    result.one_error("--format", "is not one of 'jsonl', 'parquet'")
    assert not (tmp_path / "out").exists()


def test_generate_plan_kind_refused(cli, fraud, tmp_path):
    plan = tmp_path / "plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", plan, "--quiet").code == 0
    cli("generate", plan, "-o", tmp_path / "job", "--plan-kind", "best").one_error(
        "--plan-kind", "is not one of 'plan', 'trivial'")
