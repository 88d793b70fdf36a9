"""`cepplan import`: MATCH_RECOGNIZE queries carried over run with the results of the SQL
standard's definitions (a brute-force reference) on random tables; every clause it cannot
carry over is refused with one error naming it, exit code 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.errors import InputError
from cepplan.planner.plan import trivial_plan
from cepplan.workload import build_workload
from cepplan.workload.sql_import import import_query
from tests.in_process import cepplan
from tests.workload.reference_match_recognize import reference_matches

COLUMNS = {"symbol": "string", "ts": "long", "price": "double", "volume": "long"}
QUERIES = {  # name: (query, WITHIN in seconds or None)
    "v_shape": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts
        MEASURES A.price AS a_price, LAST(C.price) AS c_price
        ONE ROW PER MATCH AFTER MATCH SKIP TO NEXT ROW
        PATTERN (A B C) WITHIN INTERVAL '6' SECOND
        DEFINE B AS B.price < PREV(B.price) AND price > 1,
               C AS C.price > A.price - 2 OR NOT C.volume <> 2) MR""", 6),
    "drop": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO NEXT ROW PATTERN (HIGH LOW) WITHIN INTERVAL '4' SECOND
        DEFINE HIGH AS HIGH.price > 2, LOW AS LOW.price < HIGH.price - 1)""", 4),
    "next_rising": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts
        AFTER MATCH SKIP TO NEXT ROW PATTERN (S U D) WITHIN INTERVAL '20' SECOND
        DEFINE S AS S.price < NEXT(S.price), U AS U.volume >= 1 AND FIRST(S.volume) <= 3,
               D AS D.price <= PREV(D.price, 2) AND abs(D.volume - 2) <= 1)""", 20),
}

ROW = st.tuples(st.sampled_from(["x", "y"]), st.integers(0, 4), st.integers(0, 4))


def imported(name: str):
    return build_workload(import_query(QUERIES[name][0], COLUMNS, file="q.sql",
                                       sample_format="csv"))


@pytest.mark.parametrize("name", sorted(QUERIES))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(ROW, max_size=14), stamps=st.data())
def test_imported_query_equals_sql_reference(name, rows, stamps):
    """Distinct times (a MATCH_RECOGNIZE over tied ORDER BY values has no one answer)."""
    times = stamps.draw(st.lists(st.integers(0, 30), min_size=len(rows), max_size=len(rows),
                                 unique=True))
    table = [{"id": i, "symbol": s, "ts": t, "price": float(p), "volume": v}
             for i, ((s, p, v), t) in enumerate(zip(rows, times, strict=True))]
    wl = imported(name)
    events = pd.DataFrame({"__type": ["Ticker"] * len(table),
                           "__ts": [float(r["ts"]) for r in table],
                           "__id": [r["id"] for r in table],
                           "symbol": [r["symbol"] for r in table],
                           "price": [r["price"] for r in table],
                           "volume": [r["volume"] for r in table]})
    result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))))
    (pattern,) = wl.patterns
    got = sorted(tuple((o.var, m["events"][o.var]["id"]) for o in pattern.positive)
                 for m in result.matches[pattern.name])
    assert got == reference_matches(QUERIES[name][0], table, QUERIES[name][1])


BASE = QUERIES["drop"][0]


@pytest.mark.parametrize(("query", "place", "fragment"), [
    (BASE.replace("AFTER MATCH SKIP TO NEXT ROW", ""), "AFTER MATCH SKIP", "(the default)"),
    (BASE.replace("TO NEXT ROW", "PAST LAST ROW"), "AFTER MATCH SKIP", "PAST LAST ROW"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW+)"), "PATTERN", "quantifier '+' on LOW"),
    (BASE.replace("(HIGH LOW)", "(HIGH | LOW)"), "PATTERN", "alternation"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW HIGH)"), "PATTERN", "HIGH appears twice"),
    (BASE.replace("WITHIN INTERVAL '4' SECOND", ""), "PATTERN", "needs a time window"),
    (BASE.replace("ORDER BY ts", "ORDER BY symbol"), "ORDER BY", "holds strings"),
    (BASE.replace("HIGH.price > 2", "HIGH.price IS NULL"), "DEFINE HIGH", "is not supported"),
    (BASE.replace("HIGH.price > 2", "PREV(HIGH.price) > 2"), "DEFINE HIGH",
     "a row outside the match"),
    (BASE.replace("HIGH.price > 2", "Z.price > 2"), "DEFINE HIGH", "'Z' is not a variable"),
    (BASE.replace("HIGH.price > 2", "HIGH.cost > 2"), "DEFINE HIGH", "'cost' is not a column"),
    (BASE.replace("(ORDER BY ts", "(ORDER BY ts ALL ROWS PER MATCH"), "ROWS PER MATCH",
     "ALL ROWS PER MATCH"),
    ("SELECT symbol FROM Ticker", "query", "not a MATCH_RECOGNIZE query"),
    (BASE.replace("SELECT *", "SELECT price"), "SELECT", "MEASURES and PARTITION BY columns"),
    ("SELECT * FROM (", "line 1", "not valid SQL"),
])
def test_what_cannot_be_carried_over_is_refused(query, place, fragment):
    with pytest.raises(InputError) as caught:
        import_query(query, COLUMNS, file="q.sql", sample_format="csv")
    (problem,) = caught.value.problems
    assert problem.path.startswith(place) and fragment in problem.message, problem


def test_import_command_writes_a_valid_workload_or_one_error(tmp_path):
    sample = tmp_path / "sample.csv"
    sample.write_text("symbol,ts,price,volume\nx,1,5.0,2\nx,2,4.0,3\n")
    query, out = tmp_path / "q.sql", tmp_path / "w.json"
    query.write_text(QUERIES["v_shape"][0])
    done = cepplan("import", str(query), str(sample), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert cepplan("validate", str(out)).returncode == 0
    query.write_text(BASE.replace("(HIGH LOW)", "(HIGH LOW*)"))
    out.unlink()
    done = cepplan("import", str(query), str(sample), "-o", str(out))
    assert done.returncode == 2 and not out.exists(), done.stderr
    assert done.stderr.splitlines() == [
        f"error: {query}: PATTERN: the quantifier '*' on LOW is not supported: each variable "
        "matches one row"]


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_each_query_matches_on_a_fixed_table(name):
    """The property above is not vacuous: on one fixed table every query matches."""
    import random

    rng = random.Random(7)
    table = [{"id": i, "symbol": rng.choice("xy"), "ts": t, "price": float(rng.randint(0, 4)),
              "volume": rng.randint(0, 4)} for i, t in enumerate(rng.sample(range(50), 50))]
    wl = imported(name)
    events = pd.DataFrame({"__type": "Ticker", "__ts": [float(r["ts"]) for r in table],
                           "__id": [r["id"] for r in table],
                           **{c: [r[c] for r in table] for c in ("symbol", "price", "volume")}})
    result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))))
    (pattern,) = wl.patterns
    got = sorted(tuple((o.var, m["events"][o.var]["id"]) for o in pattern.positive)
                 for m in result.matches[pattern.name])
    expected = reference_matches(QUERIES[name][0], table, QUERIES[name][1])
    assert expected and got == expected


PEER_QUERIES = {  # name: (query from a peer's documentation, its table's columns, refused at)
    # Flink docs, "Detecting Patterns" (docs/dev/table/streaming/match_recognize.md)
    "flink_ticker": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY rowtime
        MEASURES START_ROW.rowtime AS start_tstamp, LAST(PRICE_DOWN.rowtime) AS bottom_tstamp,
                 LAST(PRICE_UP.rowtime) AS end_tstamp
        ONE ROW PER MATCH AFTER MATCH SKIP TO LAST PRICE_UP
        PATTERN (START_ROW PRICE_DOWN+ PRICE_UP)
        DEFINE PRICE_DOWN AS (LAST(PRICE_DOWN.price, 1) IS NULL
                              AND PRICE_DOWN.price < START_ROW.price)
                             OR PRICE_DOWN.price < LAST(PRICE_DOWN.price, 1),
               PRICE_UP AS PRICE_UP.price > LAST(PRICE_DOWN.price, 1)) MR""",
                     {"symbol": "string", "rowtime": "long", "price": "double"}, "PATTERN"),
    # FLINK-7062, the first MATCH_RECOGNIZE Flink ran
    "flink_basic": ("""SELECT T.aid, T.bid, T.cid FROM MyTable MATCH_RECOGNIZE (
        MEASURES A.id AS aid, B.id AS bid, C.id AS cid
        PATTERN (A B C)
        DEFINE A AS A.name = 'a', B AS B.name = 'b', C AS C.name = 'c') AS T""",
                    {"id": "long", "name": "string"}, "ORDER BY"),
    # Trino docs, "MATCH_RECOGNIZE" (SUBSET, which sqlglot does not read)
    "trino_orders": ("""SELECT * FROM orders MATCH_RECOGNIZE(
        PARTITION BY custkey ORDER BY orderdate
        MEASURES A.totalprice AS starting_price, LAST(B.totalprice) AS bottom_price,
                 LAST(U.totalprice) AS top_price
        ONE ROW PER MATCH AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B+ C+ D+)
        SUBSET U = (C, D)
        DEFINE B AS totalprice < PREV(totalprice),
               C AS totalprice > PREV(totalprice) AND totalprice <= A.totalprice,
               D AS totalprice > PREV(totalprice))""",
                     {"custkey": "long", "orderdate": "long", "totalprice": "double"},
                     "SUBSET"),
}


@pytest.mark.parametrize("name", sorted(PEER_QUERIES))
def test_peer_documentation_queries_are_refused_at_the_clause(name):
    query, columns, place = PEER_QUERIES[name]
    with pytest.raises(InputError) as caught:
        import_query(query, columns, file="q.sql", sample_format="csv")
    (problem,) = caught.value.problems
    assert problem.path == place, problem


def test_within_option_is_a_duration_checked_where_it_is_given(tmp_path):
    sample = tmp_path / "sample.csv"
    sample.write_text("symbol,ts,price,volume\nx,1,5.0,2\n")
    query, out = tmp_path / "q.sql", tmp_path / "w.json"
    query.write_text(BASE.replace("WITHIN INTERVAL '4' SECOND", ""))
    bad = cepplan("import", str(query), str(sample), "-o", str(out), "--within", "5 parsecs")
    assert bad.returncode == 2 and bad.stderr.startswith("error: --within: "), bad.stderr
    good = cepplan("import", str(query), str(sample), "-o", str(out), "--within", "2min")
    assert good.returncode == 0, good.stderr
    assert build_workload(json.loads(out.read_text())).patterns[0].window == 120
