"""Keyed workloads on awkward keys (issue: plans for keyed workloads): every key holding one
event, a million keys, a key column missing from some rows, patterns of one workload
partitioned by different keys. Correct plans and runs, checked against counts made here from
the event file, or one clear error."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import numpy as np
import pandas as pd

from cepplan.costmodels.keyed import key_classes, profile_factors
from cepplan.stats.keyed import MAX_CLASSES, key_profile

WINDOW = 60


def _workload(folder: Path, second_key: str = "sess") -> Path:
    """Two SEQ(a:A, b:B, c:C) patterns within 60 s, one per user, one per `second_key`."""
    attributes = {"user": "string", "sess": "string", "x": "long"}
    path = folder / "workload.json"
    path.write_text(json.dumps({
        "format": "cepplan.workload/1", "name": "shop", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "event",
                   "time_column": "ts", "key_columns": ["user"]},
        "event_types": {t: {"attributes": dict(attributes)} for t in "ABC"},
        "patterns": [{"name": name, "structure": ["SEQ", "a:A", "b:B", "c:C"],
                      "partition_by": [key], "within": WINDOW}
                     for name, key in (("by_user", "user"), ("by_other", second_key))]}))
    return path


def _events(folder: Path, rows: int, seed: int, *, users: int | None, sessions: int = 40,
            missing_session: int = 0) -> Path:
    """Poisson events of A (half), B, C; `users` None gives every row its own user and
    session; every `missing_session`-th row has no session."""
    rng = random.Random(seed)
    lines, ts = ["event,ts,user,sess,x"], 0.0
    for i in range(rows):
        ts += rng.expovariate(1.0)
        user = f"u{i}" if users is None else f"u{rng.randrange(users)}"
        session = f"s{i}" if users is None else f"s{rng.randrange(sessions)}"
        if missing_session and i % missing_session == 0:
            session = ""
        lines.append(f"{rng.choice('AABC')},{ts:.3f},{user},{session},{rng.randrange(5)}")
    path = folder / "events.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def _plan_and_run(cli, folder: Path, workload: Path, events: Path) -> tuple[dict, dict]:
    for args in (["stats", events, "-w", workload, "-o", folder / "stats.json", "-q"],
                 ["optimize", workload, "--stats", folder / "stats.json", "-o",
                  folder / "plan.json", "-q"],
                 ["run", folder / "plan.json", events, "-o", folder / "out", "--engine",
                  "local", "-q"]):
        done = cli(*args)
        assert done.code == 0 and "Traceback" not in done.err, (args, done.err)
    return (json.loads((folder / "plan.json").read_text()),
            json.loads((folder / "out" / "metrics.json").read_text()))


def _brute_matches(events: pd.DataFrame, key: str) -> int:
    """SEQ(a, b, c) within WINDOW in one key, every combination, counted directly."""
    found = 0
    for _, part in events.dropna(subset=[key]).groupby(key):
        by_type = {t: part.loc[part["event"] == t, "ts"].tolist() for t in "ABC"}
        found += sum(ta < tb < tc and tc - ta <= WINDOW
                     for ta, tb, tc in itertools.product(*by_type.values()))
    return found


def test_every_key_holding_one_event_pulls_nothing(cli, tmp_path):
    """No key has two events: no partial match can form, so the plan pushes one variable and
    the engine sends its matchers exactly that type's events, finding nothing."""
    workload = _workload(tmp_path)
    events = _events(tmp_path, 3000, seed=3, users=None)
    plan, metrics = _plan_and_run(cli, tmp_path, workload, events)
    table = pd.read_csv(events)
    for name, body in plan["patterns"].items():
        first = body["detection"]["steps"][0]
        assert len(first) == 1
        pushed = {"a": "A", "b": "B", "c": "C"}[first[0]]
        assert metrics["rows_to_matchers_by_pattern"][name] == (table["event"] == pushed).sum()
        assert metrics["matches"][name] == 0


def test_a_key_column_missing_from_some_rows_rejects_them_alike_everywhere(cli, tmp_path):
    """Rows without a session: stats, compare and the engine reject the same rows with one
    warning, the keyed statistics count the rest, and the engine finds every match."""
    workload = _workload(tmp_path)
    events = _events(tmp_path, 3000, seed=2, users=30, missing_session=5)
    plan, metrics = _plan_and_run(cli, tmp_path, workload, events)
    table = pd.read_csv(events)
    valid = table.dropna(subset=["sess"])
    assert metrics["rows_rejected"] == {"missing attribute 'sess'": len(table) - len(valid)}
    keyed = json.loads((tmp_path / "stats.json").read_text())["keyed"]
    for name, key in (("by_user", "user"), ("by_other", "sess")):
        assert keyed[name]["keys"] == valid[key].nunique()
        for type_name, spread in keyed[name]["types"].items():
            assert spread["count"] == (valid["event"] == type_name).sum()
        assert metrics["matches"][name] == _brute_matches(valid, key)
    assert plan["patterns"]


def test_patterns_partitioned_by_different_keys_share_nothing(cli, tmp_path):
    """The same SEQ per user and per session: no subtree is shared between them (their
    partial matches differ), each finds its own matches; partitioned alike, they share."""
    events = _events(tmp_path, 3000, seed=4, users=30)
    plan, metrics = _plan_and_run(cli, tmp_path, _workload(tmp_path), events)
    assert plan["sharing"]["shared"] == []
    table = pd.read_csv(events)
    assert metrics["matches"]["by_user"] == _brute_matches(table, "user") > 0
    assert metrics["matches"]["by_other"] == _brute_matches(table, "sess") > 0
    alike = tmp_path / "alike"
    alike.mkdir()
    plan, metrics = _plan_and_run(cli, alike, _workload(alike, second_key="user"), events)
    assert plan["sharing"]["shared"]
    assert metrics["matches"]["by_other"] == metrics["matches"]["by_user"]


def test_a_million_keys_keep_a_bounded_profile_and_its_partial_matches():
    """10^6 keys with Zipf-skewed counts: at most MAX_CLASSES classes holding every key and
    event, and κ(S) from the merged classes within 10 % of κ computed key by key."""
    rng = np.random.default_rng(5)
    keys, span, window = 1_000_000, 10_000.0, 5.0
    weights = 1.0 / np.arange(1, keys + 1) ** 1.1
    per_key = rng.poisson(np.outer(weights / weights.sum(), [4e6, 2e6, 1e6])).astype(float)
    per_key = per_key[per_key.sum(axis=1) > 0]
    profile = key_profile(per_key, list("ABC"), span)
    classes = [(c["keys"], dict(zip("ABC", c["counts"], strict=True)))
               for c in profile["classes"]]
    assert len(classes) <= MAX_CLASSES and sum(k for k, _ in classes) == len(per_key)
    totals = np.array([[k * c[t] for t in "ABC"] for k, c in classes]).sum(axis=0)
    assert np.allclose(totals, per_key.sum(axis=0))
    factors = profile_factors(key_classes(classes, span),
                              {v: (t, 1.0) for v, t in zip("abc", "ABC", strict=True)},
                              window, {})
    rates = per_key / span
    for size in (2, 3):
        for subset in itertools.combinations(range(3), size):
            exact = (np.prod(rates[:, subset], axis=1).sum()
                     / np.prod(rates[:, subset].sum(axis=0)))
            merged = factors[frozenset("abc"[i] for i in subset)]
            assert abs(merged / exact - 1) < 0.10, (subset, merged, exact)
