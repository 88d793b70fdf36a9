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
    "first_of_match": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol
        ORDER BY ts AFTER MATCH SKIP TO NEXT ROW PATTERN (A B C) WITHIN INTERVAL '20' SECOND
        DEFINE C AS price > FIRST(price) AND LAST(B.volume, 0) >= 1)""", 20),
    "disjoint_past_last_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol
        ORDER BY ts PATTERN (A B C) WITHIN INTERVAL '20' SECOND
        DEFINE A AS volume = 1, B AS (B.volume = 2 AND price >= A.price), C AS 3 = C.volume)""",
                               20),
    "disjoint_skip_to_last": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO LAST C PATTERN (A B C) WITHIN INTERVAL '20' SECOND
        DEFINE A AS volume = 1 AND symbol = 'x', B AS B.volume = 2, C AS volume = 3)""", 20),
    "skip_till_next_last": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol
        ORDER BY ts AFTER MATCH SKIP TO NEXT ROW PATTERN (A B X*? C) WITHIN INTERVAL '8' SECOND
        DEFINE A AS price > 1, X AS TRUE, B AS B.volume >= A.volume AND PREV(B.price) < 4,
               C AS C.price > A.price AND volume > FIRST(volume)) ORDER BY symbol""", 8),
    "skip_till_next_only": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO NEXT ROW PATTERN (S GAP*? E) WITHIN INTERVAL '12' SECOND
        DEFINE S AS S.volume = 0, GAP AS TRUE, E AS E.price >= S.price + 2)""", 12),
    "skip_till_next_past_last_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts PATTERN (A B X*? C) WITHIN INTERVAL '8' SECOND
        DEFINE B AS B.volume >= A.volume, C AS C.price > A.price)""", 8),
    "skip_till_next_to_last": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO LAST B PATTERN (A B GAP*? C) WITHIN INTERVAL '10' SECOND
        DEFINE A AS A.volume <= 2, C AS C.price >= B.price + 1)""", 10),
    "overlapping_default_skip": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol
        ORDER BY ts PATTERN (A B) WITHIN INTERVAL '5' SECOND
        DEFINE B AS B.price >= A.price)""", 5),
    "overlapping_past_last_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP PAST LAST ROW PATTERN (A B C) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.volume >= A.volume, C AS C.price > 1)""", 9),
    "skip_to_last": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (PARTITION BY symbol ORDER BY ts
        AFTER MATCH SKIP TO LAST C PATTERN (A B C) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.price <= A.price + 1)""", 9),
    "skip_to_first": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO FIRST B PATTERN (A B C) WITHIN INTERVAL '9' SECOND
        DEFINE C AS C.volume >= B.volume)""", 9),
    "defined_as_true": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO NEXT ROW PATTERN (U D) WITHIN INTERVAL '3' SECOND
        DEFINE U AS TRUE, D AS D.price < U.price)""", 3),
    "optional_greedy_past_last_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts PATTERN (A B? C) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.price >= A.price, C AS C.volume >= A.volume OR C.price > B.price)""", 9),
    "optional_reluctant_next_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO NEXT ROW PATTERN (A B?? C??) WITHIN INTERVAL '9' SECOND
        DEFINE A AS A.volume <= 2, B AS B.price <> A.price)""", 9),
    "optional_last_greedy_to_last": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts AFTER MATCH SKIP TO LAST B PATTERN (A B C? D?)
        WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.price < A.price + 2, C AS C.volume > 1, D AS D.price >= B.price)""", 9),
    "repeated_past_last_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts AFTER MATCH SKIP PAST LAST ROW PATTERN (A B+ C)
        WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.price <= PREV(B.price), C AS C.price > B.price)""", 9),
    "repeated_bounded_next_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        MEASURES FIRST(B.price) AS b_first, B.volume AS b_last
        AFTER MATCH SKIP TO NEXT ROW PATTERN (A B{2,3} C) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.volume >= A.volume, C AS C.price >= FIRST(B.price))""", 9),
    "repeated_two_to_last": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts AFTER MATCH SKIP TO LAST U PATTERN (S D+ U+)
        WITHIN INTERVAL '12' SECOND
        DEFINE D AS D.price < PREV(D.price), U AS U.price > PREV(U.price))""", 12),
    "optional_first_greedy_next_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO NEXT ROW PATTERN (A? B C) WITHIN INTERVAL '9' SECOND
        DEFINE A AS A.volume = 1, B AS B.price >= 2, C AS C.price <= B.price)""", 9),
    "zero_or_more_past_last_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts PATTERN (A B* C) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.price <= PREV(B.price),
               C AS C.price > A.price OR C.volume > B.volume)""", 9),
    "zero_or_more_bounded_next_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO NEXT ROW PATTERN (A B{0,2} C) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.volume >= A.volume, C AS C.price >= FIRST(B.price) OR C.volume = 0)""",
                                      9),
    "zero_or_more_first_next_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts AFTER MATCH SKIP TO NEXT ROW PATTERN (B{0,} C D*)
        WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.price < 3, C AS C.price >= 2, D AS D.volume > 1)""", 9),
    "reluctant_plus_past_last_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts PATTERN (A B+? C) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.price >= A.price, C AS C.volume >= 2)""", 9),
    "reluctant_star_next_row": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (ORDER BY ts
        AFTER MATCH SKIP TO NEXT ROW PATTERN (A B*? C) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.volume > 0, C AS C.price > A.price)""", 9),
    "reluctant_bounded_with_optional": ("""SELECT * FROM Ticker MATCH_RECOGNIZE (
        PARTITION BY symbol ORDER BY ts AFTER MATCH SKIP PAST LAST ROW
        PATTERN (A B{2,3}? C??) WITHIN INTERVAL '9' SECOND
        DEFINE B AS B.price > PREV(B.price) OR B.volume = 0, C AS C.volume < 3)""", 9),
}

ROW = st.tuples(st.sampled_from(["x", "y"]), st.integers(0, 4), st.integers(0, 4))


def imported(name: str):
    return build_workload(import_query(QUERIES[name][0], COLUMNS, file="q.sql",
                                       sample_format="csv"))


def bound(wl) -> list[str]:
    """The variables the imported pattern binds (an `X*?` binds none), in pattern order."""
    return list(dict.fromkeys(o.var for p in wl.patterns for o in sorted(
        p.positive, key=lambda o: o.position)))


def found(wl, result) -> list[tuple]:
    """Each match of the one user pattern (over its core patterns, one per choice of optional
    variables) as ((variable, id), ...) in pattern order."""
    return sorted(tuple((v, e["id"]) for v in bound(wl) if v in m["events"]
                        for e in rows_of(m["events"][v]))
                  for p in wl.patterns for m in result.matches[p.name])


def rows_of(bound: dict | list[dict]) -> list[dict]:
    """A variable's events in a match: one, or a repeated (KLEENE) variable's several."""
    return bound if isinstance(bound, list) else [bound]


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
    assert found(wl, result) == reference_matches(QUERIES[name][0], table, QUERIES[name][1],
                                  bound=bound(wl))


BASE = QUERIES["drop"][0]


@pytest.mark.parametrize(("query", "place", "fragment"), [
    (BASE.replace("(HIGH LOW)", "(HIGH LOW{0,0})"), "PATTERN", "quantifier '{0,0}' on LOW"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW{3,2})"), "PATTERN", "quantifier '{3,2}' on LOW"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW{x})"), "PATTERN", "'LOW{x}' is not supported"),
    (BASE.replace("(HIGH LOW)", "(HIGH+ LOW{2,}?)"), "PATTERN",
     "greedy (HIGH+) and reluctant (LOW{2,}?) quantifiers together"),
    (BASE.replace("(HIGH LOW)", "(HIGH* LOW{0,2}?)"), "PATTERN", "every variable is optional"),
    (BASE.replace("(HIGH LOW)", "(HIGH{0,} LOW*)"), "PATTERN", "every variable is optional"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW* C)").replace("LOW AS", "C AS PREV(C.price) > 1, "
                                                         "LOW AS"),
     "DEFINE C", "whether an optional variable (LOW) matched"),
    (BASE.replace("(HIGH LOW)", "(HIGH? LOW+)").replace("HIGH.price - 1", "PREV(LOW.price)"),
     "DEFINE LOW", "whether an optional variable (HIGH) matched"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW*)").replace("TO NEXT ROW", "TO LAST LOW"),
     "AFTER MATCH SKIP", "a match may leave without rows"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW*?)").replace("(ORDER BY ts", "(ORDER BY ts MEASURES "
                                                        "HIGH.price AS a"),
     "MEASURES a", "with an optional variable (LOW)"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW+ X*? C)").replace("LOW AS", "C AS C.price > 1, "
                                                             "LOW AS"),
     "PATTERN", "a quantified variable (LOW) with X*?"),
    (BASE.replace("(HIGH LOW)", "(LOW+)").replace("HIGH AS HIGH.price > 2, ", ""), "PATTERN",
     "lone repeated variable (LOW)"),
    (BASE.replace("(HIGH LOW)", "(HIGH+ LOW)").replace("HIGH.price - 1", "PREV(HIGH.price)"),
     "DEFINE LOW", "PREV"),
    (BASE.replace("(HIGH LOW)", "(HIGH+ LOW)").replace("HIGH.price - 1", "NEXT(HIGH.price)"),
     "DEFINE LOW", "moves from a row of the repeated HIGH"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW+)").replace("HIGH.price - 1",
                                                        "PREV(LOW.price, 2)"),
     "DEFINE LOW", "only PREV by one row"),
    (BASE.replace("(HIGH LOW)", "(HIGH+ LOW)").replace("HIGH.price - 1",
                                                        "LAST(HIGH.price, 1)"),
     "DEFINE LOW", "inside a repeated variable's rows"),
    (BASE.replace("(HIGH LOW)", "(HIGH+ LOW)").replace("HIGH AS HIGH.price > 2",
                                                        "HIGH AS HIGH.price > PREV(HIGH.price)"),
     "DEFINE HIGH", "outside the match"),
    (BASE.replace("(HIGH LOW)", "(HIGH? LOW?)"), "PATTERN", "every variable is optional"),
    (BASE.replace("(HIGH LOW)", "(HIGH? LOW C??)"), "PATTERN",
     "greedy (HIGH?) and reluctant (C??) quantifiers together"),
    (BASE.replace("(HIGH LOW)", "(HIGH? X*? LOW)"), "PATTERN",
     "a quantified variable (HIGH) with X*?"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW? C)").replace("LOW AS", "C AS NEXT(HIGH.price) > 1,"
                                                         " LOW AS"),
     "DEFINE C", "whether an optional variable (LOW) matched"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW? C)").replace("LOW AS", "C AS PREV(C.price) > 1, "
                                                         "LOW AS"),
     "DEFINE C", "whether an optional variable (LOW) matched"),
    (BASE.replace("(HIGH LOW)", "(HIGH? LOW)").replace("HIGH.price - 1", "FIRST(price)"),
     "DEFINE LOW", "which the optional HIGH may not bind"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW?)").replace("TO NEXT ROW", "TO LAST LOW"),
     "AFTER MATCH SKIP", "a match may leave without rows"),
    (BASE.replace("(HIGH LOW)", "(HIGH? LOW C)").replace("TO NEXT ROW", "TO FIRST LOW"),
     "AFTER MATCH SKIP", "first row"),
    (BASE.replace("(HIGH LOW)", "(HIGH LOW?)").replace("(ORDER BY ts", "(ORDER BY ts MEASURES "
                                                       "HIGH.price AS a"),
     "MEASURES a", "with an optional variable (LOW)"),
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
    (BASE.replace("HIGH.price > 2", "HIGH.price > LOW.price"), "DEFINE HIGH",
     "comes after HIGH"),
    (BASE.replace("HIGH.price > 2", "LAST(HIGH.price, 1) > 2"), "DEFINE HIGH",
     "a row the single-row variable does not have"),
    (BASE.replace("TO NEXT ROW", "TO FIRST HIGH"), "AFTER MATCH SKIP", "first row"),
    (BASE.replace("TO NEXT ROW", "TO LAST Z"), "AFTER MATCH SKIP", "'Z' is not a variable"),
    (BASE.replace("(HIGH LOW)", "(HIGH X*? LOW)").replace("LOW.price < HIGH.price - 1",
                                                          "LOW.price < PREV(LOW.price)"),
     "DEFINE LOW", "reads across X*?"),
    (BASE.replace("(HIGH LOW)", "(HIGH X*? LOW)").replace("HIGH.price - 1", "X.price"),
     "DEFINE LOW", "reads the rows X*? skips"),
    (BASE.replace("(HIGH LOW)", "(HIGH X*? LOW)").replace("TO NEXT ROW", "TO FIRST HIGH"),
     "AFTER MATCH SKIP", "first row"),
    (BASE.replace("HIGH.price > 2", "1 = 1"), "DEFINE HIGH", "reads no column"),
    (BASE.replace("LOW AS", "HIGH AS HIGH.price > 3, LOW AS"), "DEFINE HIGH",
     "HIGH is defined twice"),
    (BASE.replace("(ORDER BY ts", "(ORDER BY ts MEASURES HIGH.price AS ts"),
     "MEASURES ts", "cepplan reserves it"),
    (BASE.replace("(ORDER BY ts", "(ORDER BY ts MEASURES HIGH.price AS a, LOW.price AS a"),
     "MEASURES a", "names two columns"),
    (BASE.replace("(ORDER BY ts", "(PARTITION BY symbol ORDER BY ts MEASURES HIGH.price AS "
                  "symbol"), "MEASURES symbol", "names two columns"),
    (BASE.replace("(ORDER BY ts", "(PARTITION BY ts ORDER BY ts"), "PARTITION BY",
     "the ORDER BY column"),
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
    query.write_text(BASE.replace("(HIGH LOW)", "(HIGH+ LOW*?)"))
    out.unlink()
    done = cepplan("import", str(query), str(sample), "-o", str(out))
    assert done.returncode == 2 and not out.exists(), done.stderr
    assert done.stderr.splitlines() == [
        f"error: {query}: PATTERN: greedy (HIGH+) and reluctant (LOW*?) quantifiers together "
        "are not supported: cepplan prefers matches one way per pattern"]
    for name, kind, said in (("repeated_past_last_row", "KLEENE", "repeated"),
                             ("optional_greedy_past_last_row", "OPTIONAL", "optional")):
        query.write_text(QUERIES[name][0])
        done = cepplan("import", str(query), str(sample), "-o", str(out))
        assert done.stdout == (f"wrote {out}: pattern Ticker_match = SEQ of 3 Ticker rows (B "
                               f"{said}) in strict contiguity, after a match past_last_event, "
                               "the greedy match of each first row\n"), done.stderr
        written = json.loads(out.read_text())["patterns"][0]
        assert (written["structure"][2], written["prefer"]) == ([kind, "B:Ticker"], "greedy")
    query.write_text(QUERIES["skip_till_next_only"][0])
    done = cepplan("import", str(query), str(sample), "-o", str(out))
    assert done.stdout == (f"wrote {out}: pattern Ticker_match = SEQ of 2 Ticker rows in "
                           "strict contiguity but for the last, the first after them that "
                           "qualifies\n"), done.stderr
    assert json.loads(out.read_text())["patterns"][0]["strategy"] == {"E": "next"}
    query.write_text(QUERIES["skip_to_last"][0])
    done = cepplan("import", str(query), str(sample), "-o", str(out))
    assert done.stdout == (f"wrote {out}: pattern Ticker_match = SEQ of 3 Ticker rows in "
                           "strict contiguity, after a match to_last C\n"), done.stderr
    assert json.loads(out.read_text())["patterns"][0]["after_match"] == {"to_last": "C"}


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_each_query_matches_on_a_fixed_table(name):
    """The property above is not vacuous: on one fixed table every query matches."""
    import random

    rng = random.Random(7)
    table = [{"id": i, "symbol": rng.choice("xy"), "ts": t, "price": float(rng.randint(0, 4)),
              "volume": rng.randint(0, 4)} for i, t in enumerate(rng.sample(range(400), 400))]
    wl = imported(name)
    events = pd.DataFrame({"__type": "Ticker", "__ts": [float(r["ts"]) for r in table],
                           "__id": [r["id"] for r in table],
                           **{c: [r[c] for r in table] for c in ("symbol", "price", "volume")}})
    result = run_local(events, job_from_json(job_data(wl, trivial_plan(wl))))
    expected = reference_matches(QUERIES[name][0], table, QUERIES[name][1],
                                  bound=bound(wl))
    assert expected and found(wl, result) == expected


@pytest.mark.parametrize("column", ["a b", "__x", "1st"])
def test_a_sample_column_cepplan_cannot_name_is_refused_at_the_sample(tmp_path, column):
    sample = tmp_path / "sample.csv"
    sample.write_text(f"symbol,ts,price,{column}\nx,1,5.0,2\n")
    query, out = tmp_path / "q.sql", tmp_path / "w.json"
    query.write_text(QUERIES["drop"][0])
    done = cepplan("import", str(query), str(sample), "-o", str(out))
    assert done.returncode == 2 and not out.exists(), done.stderr
    assert done.stderr.startswith(f"error: {sample}: {column}: not a column name"), done.stderr
    assert len(done.stderr.splitlines()) == 1


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
