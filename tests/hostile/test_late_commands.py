"""The commands and options added late (compare, serve, cover, synth-mobile, synth --linear-road,
optimize's search and covering options) and the `contexts` / `consumers` workload sections,
under bad, extreme and malformed input: exit 2 with one line naming the option or file, the
place and the problem, before any work — or exit 0 with a correct result. Never a traceback,
a huge allocation or a lost file."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cepplan.errors import InputError
from cepplan.workload import build_workload
from tests.hostile.conftest import EXAMPLES

MOBILE = EXAMPLES / "mobile"
TRAFFIC = EXAMPLES / "traffic"

# -- command-line values ----------------------------------------------------------------------

OPTIMIZE = [
    (["--search", "genetic"], "--search", "is not one of"),
    (["--neighborhood", "face"], "--neighborhood", "vertex:K"),
    (["--neighborhood", "vertex:1"], "--neighborhood", "K ≥ 2"),
    (["--neighborhood", "vertex:-2"], "--neighborhood", "K ≥ 2"),
    (["--neighborhood", "vertex:x"], "--neighborhood", "K ≥ 2"),
    (["--covering-solver", "gurobi"], "--covering-solver", "is not one of"),
    (["--covering-time-limit", "-1"], "--covering-time-limit", "more than 0"),
    (["--covering-time-limit", "0"], "--covering-time-limit", "more than 0"),
    (["--covering-time-limit", "nan"], "--covering-time-limit", "more than 0"),
    (["--covering-time-limit", "inf"], "--covering-time-limit", "at most 86400"),
    (["--covering-time-limit", "1e300"], "--covering-time-limit", "at most 86400"),
    (["--seed", "-1"], "--seed", "not in the range"),
    (["--seed", str(2**64)], "--seed", "not in the range"),  # was: orjson's TypeError
    (["--seed", "abc"], "--seed", "not a valid integer"),
]


@pytest.mark.parametrize(("extra", "option", "fragment"), OPTIMIZE,
                         ids=[" ".join(c[0]) for c in OPTIMIZE])
def test_optimize_search_option_refused(cli, fraud, extra, option, fragment):
    out = fraud / "plan.json"
    cli("optimize", fraud / "workload.json", "-o", out, "--quiet", *extra).one_error(
        option, fragment)
    assert not out.exists()


def test_optimize_huge_neighbourhood_is_all_patterns(cli, fraud):
    """vertex:K with K beyond the number of patterns moves all of them: a plan, exit 0, the
    same as vertex:3 on a three-pattern workload."""
    plans = []
    for k in ("3", "99999999999999999999"):
        out = fraud / f"plan{len(k)}.json"
        assert cli("optimize", fraud / "workload.json", "-o", out, "-q", "--seed", "4",
                   "--neighborhood", f"vertex:{k}").code == 0
        plans.append(json.loads(out.read_text())["patterns"])
    assert plans[0] == plans[1]


COMPARE = [
    (["--time-limit", "nan"], "--time-limit", "finite"),  # was: "--search: ... positive"
    (["--time-limit", "inf"], "--time-limit", "at most 86400"),  # was accepted
    (["--time-limit", "0"], "--time-limit", "range"),
    (["--seed", "-4"], "--seed", "not in the range"),
]


@pytest.mark.parametrize(("extra", "option", "fragment"), COMPARE,
                         ids=[" ".join(c[0]) for c in COMPARE])
def test_compare_option_refused(cli, fraud, extra, option, fragment):
    out = fraud / "report.html"
    cli("compare", fraud / "workload.json", "-o", out, "-q", *extra).one_error(option, fragment)
    assert not out.exists()


def test_compare_bad_inputs(cli, fraud, tmp_path):
    """A workload that is not JSON, stats that are events, events that are missing or are a
    workload: one line each, naming the file, nothing written."""
    out = tmp_path / "report.html"
    w = fraud / "workload.json"
    cli("compare", fraud / "events.csv", "-o", out, "-q").one_error(
        str(fraud / "events.csv"), "not valid JSON")
    cli("compare", w, "--stats", fraud / "events.csv", "-o", out, "-q").one_error(
        str(fraud / "events.csv"), "not valid JSON")
    (tmp_path / "stats.json").write_text('{"format": "cepplan.stats/1", "rates": [1, 2]}')
    cli("compare", w, "--stats", tmp_path / "stats.json", "-o", out, "-q").one_error(
        "stats.json", "rates")
    cli("compare", w, "--events", tmp_path / "none.csv", "-o", out, "-q", "--time-limit",
        "1").one_error("none.csv", "not found")
    cli("compare", w, "--events", w, "-o", out, "-q", "--time-limit", "1").one_error(
        str(w), "not in the input")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fraud", "stats.json"]


def test_compare_output_a_directory_refused_and_a_new_folder_made(cli, fraud, tmp_path):
    """`-o DIR` is refused before planning (it wrote DIR.html, DIR.md and DIR.json beside
    DIR: `-o /tmp` wrote /tmp.html at the root); `-o new/folder/r.html` creates the folder."""
    folder = tmp_path / "existing"
    folder.mkdir()
    (folder / "keep.txt").write_bytes(b"mine")
    cli("compare", fraud / "workload.json", "-o", folder, "-q", "--time-limit", "2").one_error(
        str(folder), "is a directory", "report.html")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["existing", "fraud"]
    assert (folder / "keep.txt").read_bytes() == b"mine"
    nested = tmp_path / "new" / "folder" / "r.html"
    assert cli("compare", fraud / "workload.json", "-o", nested, "-q", "--time-limit",
               "2").code == 0
    report = json.loads(nested.with_suffix(".json").read_text())
    assert report["best"] in {p["name"] for p in report["planners"]}


SERVE = [
    (["--port", "70000"], "--port", "range"),
    (["--port", "-1"], "--port", "range"),
    (["--max-time-limit", "nan"], "--max-time-limit", "finite"),  # was: served
    (["--max-time-limit", "inf"], "--max-time-limit", "finite"),  # was: served
    (["--max-time-limit", "0"], "--max-time-limit", "range"),
    (["--workers", "0"], "--workers", "range"),
    (["--max-body", "10"], "--max-body", "range"),
    (["--cache-size", "-1"], "--cache-size", "range"),
    (["--port", str(10**21)], "--port", "range"),
    (["--workers", str(10**21)], "--workers", "range"),
    (["--max-body", str(10**21)], "--max-body", "range"),  # was: served, unbounded
    (["--cache-size", str(10**21)], "--cache-size", "range"),  # was: served, unbounded
    (["--shutdown-grace", "nan"], "--shutdown-grace", "finite"),
    (["--shutdown-grace", "-1"], "--shutdown-grace", "range"),
    (["--shutdown-grace", "1e9"], "--shutdown-grace", "range"),
]


@pytest.mark.parametrize(("extra", "option", "fragment"), SERVE,
                         ids=[" ".join(c[0]) for c in SERVE])
def test_serve_option_refused_before_listening(cli, extra, option, fragment):
    cli("serve", "-q", *extra).one_error(option, fragment)


def test_serve_short_token_refused(cli, monkeypatch):
    monkeypatch.setenv("CEPPLAN_TOKEN", "short")
    cli("serve", "-q").one_error("CEPPLAN_TOKEN", "at least 16 characters")


SYNTH_MOBILE = [
    (["--cars", "0"], "--cars", "positive"),
    (["--cars", "100000000"], "--cars", "from 1 to 1000000"),  # was: a huge allocation
    (["--cars", str(10**21)], "--cars", "from 1 to 1000000"),  # was: blamed on --duration
    (["--cars", "1000000"], "--duration", "car positions"),
    (["--consumers", str(10**21)], "--consumers", "between 0 and --cars"),
    (["--seed", str(10**21)], "--seed", "not in the range"),
    (["--duration", "1e12"], "--duration", "car positions"),  # was: a traceback
    (["--duration", "inf"], "--duration", "finite"),  # was: a traceback
    (["--duration", "nan"], "--duration", "positive"),
    (["--side", "inf"], "--side", "finite"),  # was: a traceback
    (["--interest", "inf"], "--interest", "finite"),
    (["--interest", "-5"], "--interest", "positive"),
    (["--window", "inf"], "--window", "finite"),  # was: a workload with an infinite window
    (["--window", "0"], "--window", "positive"),
    (["--batch", "nan"], "--batch", "positive"),
    (["--threshold", "1.5"], "--threshold", "[0, 1]"),
    (["--threshold", "nan"], "--threshold", "[0, 1]"),
    (["--consumers", "500"], "--consumers", "between 0 and --cars"),
    (["--consumers", "-1"], "--consumers", "between 0 and --cars"),
]


@pytest.mark.parametrize(("extra", "option", "fragment"), SYNTH_MOBILE,
                         ids=[" ".join(c[0]) for c in SYNTH_MOBILE])
def test_synth_mobile_option_refused(cli, tmp_path, extra, option, fragment):
    out = tmp_path / "mobile"
    cli("synth-mobile", "-o", out, "-q", *extra).one_error(option, fragment)
    assert not out.exists()


def test_synth_mobile_into_a_file_refused(cli, tmp_path):
    target = tmp_path / "taken"
    target.write_bytes(b"mine")
    cli("synth-mobile", "-o", target, "-q").one_error(str(target), "is a file")
    assert target.read_bytes() == b"mine"


LINEAR_ROAD = [
    (["--segments", "0"], "--segments", "at least 1"),  # was: "No objects to concatenate"
    (["--segments", "-1"], "--segments", "at least 1"),
    (["--segments", "100000000"], "--duration", "position reports"),  # was: a stall
    (["--segments", str(10**21)], "--duration", "fewer --segments"),
    (["--duration", "1e12"], "--duration", "position reports"),  # was: a traceback
    (["--duration", "inf"], "--duration", "finite"),
    (["--congestion-share", "1"], "--linear-road", "[0, 1)"),
    (["--congestion-share", "nan"], "--linear-road", "[0, 1)"),
    (["--congestion-share", "-0.1"], "--linear-road", "[0, 1)"),
    (["--duration", "10"], "--linear-road", "do not fit"),
]


@pytest.mark.parametrize(("extra", "option", "fragment"), LINEAR_ROAD,
                         ids=[" ".join(c[0]) for c in LINEAR_ROAD])
def test_linear_road_option_refused(cli, tmp_path, extra, option, fragment):
    out = tmp_path / "lr.csv"
    cli("synth", TRAFFIC / "workload.json", "-o", out, "-q", "--linear-road",
        *extra).one_error(option, fragment)
    assert not out.exists()


def test_linear_road_needs_its_event_type(cli, fraud, tmp_path):
    cli("synth", fraud / "workload.json", "-o", tmp_path / "lr.csv", "-q",
        "--linear-road").one_error("event_types", "PositionReport")


@pytest.fixture(scope="module")
def mobile_plan(tmp_path_factory) -> Path:
    from cepplan.cli.app import app
    plan = tmp_path_factory.mktemp("mplan") / "plan.json"
    app(["optimize", str(MOBILE / "workload.json"), "-o", str(plan), "-q"],
        standalone_mode=False)
    return plan


def test_cover_bad_inputs(cli, mobile_plan, fraud, tmp_path):
    """Missing events, events of another format, a plan without consumers, an output that is
    a file (was: a traceback after the work): one line each, nothing written."""
    out = tmp_path / "out"
    events = MOBILE / "events.jsonl"
    cli("cover", mobile_plan, tmp_path / "none.jsonl", "-o", out, "-q").one_error(
        "none.jsonl", "not found")
    cli("cover", mobile_plan, fraud / "events.csv", "-o", out, "-q").one_error(
        "events.csv", "no JSON object")
    taken = tmp_path / "taken"
    taken.write_bytes(b"mine")
    cli("cover", mobile_plan, events, "-o", taken, "-q").one_error(str(taken), "is a file")
    assert taken.read_bytes() == b"mine"
    fraud_plan = tmp_path / "fraud-plan.json"
    assert cli("optimize", fraud / "workload.json", "-o", fraud_plan, "-q").code == 0
    cli("cover", fraud_plan, fraud / "events.csv", "-o", out, "-q").one_error(
        "covering", "no consumer queries")
    cli("cover", mobile_plan, events, "-o", out, "-q", "--solver", "gurobi").one_error(
        "--solver", "is not one of")
    assert not out.exists()


# -- malformed contexts / consumers sections, property-based -----------------------------------

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**63, 2**63 - 1)
    | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                max_size=3),
    max_leaves=8)


def _paths(value, prefix=()) -> list[tuple]:
    """Every place inside `value` (lists cut to their first two items)."""
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*prefix, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value[:2]):
            found += _paths(inner, (*prefix, index))
    return found


def _small(doc: dict, section: str) -> dict:
    doc = copy.deepcopy(doc)
    if section == "consumers":
        doc["consumers"]["queries"] = doc["consumers"]["queries"][:2]
    return doc


SECTIONS = {name: _small(json.loads((folder / "workload.json").read_text()), name)
            for name, folder in (("contexts", TRAFFIC), ("consumers", MOBILE))}
PLACES = [(name, path) for name, doc in SECTIONS.items() for path in _paths(doc[name])]


def _replaced(section: str, path: tuple, value) -> dict:
    doc = copy.deepcopy(SECTIONS[section])
    if not path:
        doc[section] = value
        return doc
    target = doc[section]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


@settings(max_examples=200)
@given(place=st.sampled_from(PLACES), value=JSON | st.sampled_from(
    [-1, 0, 1e308, -1e308, "", "clear", [], {}, [[0, 0, 0]], [0, 0, 1, 1]]))
def test_any_contexts_or_consumers_shape_builds_or_is_an_input_error(place, value):
    """Any value anywhere in the traffic workload's `contexts` or the mobile workload's
    `consumers`: the workload builds, or every problem names the file and a JSON path."""
    section, path = place
    try:
        build_workload(_replaced(section, path, value), file="w.json")
    except InputError as err:
        assert err.problems and all(p.file == "w.json" for p in err.problems)


MALFORMED = [
    ("contexts", ("transitions", 0, "to"), "nowhere", "contexts.transitions[0]"),
    ("contexts", ("types", "clear", "patterns"), "toll", "contexts.types.clear.patterns"),
    ("contexts", ("initial",), "rush hour", "contexts.initial"),
    ("contexts", ("partition_by",), ["no_such_column"], "patterns[0].partition_by"),
    ("consumers", ("queries", 0, "region"), [1, 2, 3], "consumers.queries[0].region"),
    ("consumers", ("queries", 0, "window"), {"time": -2}, "consumers.queries[0].window"),
    ("consumers", ("queries", 0, "qor", "precision"), 1.5, "consumers.queries[0].qor"),
    ("consumers", ("queries", 0, "operator"), "median", "consumers.queries[0].operator"),
    ("consumers", ("queries", 0, "track"), [[0, "x", 1]], "consumers.queries[0].track"),
    ("consumers", ("operators", "avg_speed", "aggregate"), "mode",
     "consumers.operators.avg_speed.aggregate"),
]


@pytest.mark.parametrize(("section", "path", "value", "place"), MALFORMED,
                         ids=[m[3] for m in MALFORMED])
def test_malformed_section_through_the_command_line(cli, tmp_path, section, path, value, place):
    """The same shapes through `cepplan optimize`: exit 2, error lines naming the file and
    the JSON path, no plan written."""
    workload = tmp_path / "w.json"
    workload.write_text(json.dumps(_replaced(section, path, value)))
    out = tmp_path / "plan.json"
    result = cli("optimize", workload, "-o", out, "-q")
    assert result.code == 2 and "Traceback" not in result.err, result.err
    assert result.errors and all(str(workload) in line for line in result.errors), result.err
    assert any(place.split("[")[0] in line for line in result.errors), (place, result.err)
    assert not out.exists()
