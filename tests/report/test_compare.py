"""`cepplan compare`: the report's figures against independent runs of each planner through
`cepplan optimize`, and the three files it writes."""

from __future__ import annotations

import html
import json
import re
from html.parser import HTMLParser

import pytest

from tests.conftest import EXAMPLES
from tests.in_process import cepplan

EXAMPLE_NAMES = sorted(p.name for p in EXAMPLES.iterdir() if (p / "workload.json").exists())


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """Every bundled example compared once (the CLI, as a user runs it)."""
    out = tmp_path_factory.mktemp("reports")
    for name in EXAMPLE_NAMES:
        done = cepplan("compare", str(EXAMPLES / name / "workload.json"), "-o",
                       str(out / f"{name}.html"), "-q")
        assert done.returncode == 0, done.stderr
    return out


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_report_figures_equal_separate_optimize_runs(reports, tmp_path, name):
    """Each planner's per-pattern cost and latency in report.json equal what `cepplan
    optimize` writes for that solver; trivial is the plan's naive cost."""
    report = json.loads((reports / f"{name}.json").read_text())
    planners = {p["name"]: p for p in report["planners"]}
    assert set(planners) == {"trivial", "dp", "heuristic", "dp-independent"}
    for planner, flags in {"dp": ["--solver", "dp"], "heuristic": ["--solver", "heuristic"],
                           "dp-independent": ["--solver", "dp", "--no-share"]}.items():
        plan_path = tmp_path / f"{planner}.json"
        done = cepplan("optimize", str(EXAMPLES / name / "workload.json"), "-o",
                       str(plan_path), *flags)
        assert done.returncode == 0, done.stderr
        plan = json.loads(plan_path.read_text())
        assert plan["provenance"]["total_expected_cost"] == pytest.approx(
            planners[planner]["total_cost"], rel=1e-9)
        for pattern, body in plan["patterns"].items():
            entry = planners[planner]["patterns"][pattern]
            assert entry["steps"] == body["detection"]["steps"]
            assert entry["cost"] == pytest.approx(body["detection"]["expected_cost"])
            assert entry["latency"] == body["detection"]["latency"]
            assert planners["trivial"]["patterns"][pattern]["cost"] == pytest.approx(
                body["naive_cost"])
    assert planners["trivial"]["total_cost"] == pytest.approx(
        plan["provenance"]["naive_total_cost"])
    assert report["best"] == min(planners.values(), key=lambda p: p["total_cost"])["name"]


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_report_files_are_self_contained_and_complete(reports, name):
    """The page loads nothing from the network; Markdown and HTML name every pattern."""
    page = (reports / f"{name}.html").read_text()
    markdown = (reports / f"{name}.md").read_text()
    report = json.loads((reports / f"{name}.json").read_text())
    assert "<link" not in page and " src=" not in page and "@import" not in page
    assert not re.search(r"url\((?!#)", page)  # only references inside the page
    for pattern in report["workload"]["patterns"]:
        assert pattern in page and pattern in markdown
    fronts = [f for f in report["pareto"].values() if len(f) > 1]  # trade-offs are drawn
    trivial = report["planners"][0]["total_cost"]
    saving = any(p["total_cost"] < trivial for p in report["planners"][1:])  # bars of savings
    plots = (saving + len(fronts) + 2 * bool(report.get("evaluation"))
             + bool(report.get("sharing")) + bool(report.get("contexts"))
             + 2 * bool(report.get("covering")))
    assert page.count("<svg") == plots
    for front in report["pareto"].values():
        assert sum(p["chosen"] for p in front) == 1


@pytest.mark.parametrize("name", EXAMPLE_NAMES)
def test_summary_is_the_same_in_json_markdown_and_page(reports, name):
    """report.json's summary holds what the plan saves against the trivial plan, figures as
    the planners' and searches' costs give them; report.md and report.html say the same
    headline and figures, before anything else."""
    report = json.loads((reports / f"{name}.json").read_text())
    summary = report["summary"]
    planners = report["planners"]
    chosen = min(planners[1:], key=lambda p: p["total_cost"])  # the first on a tie
    assert summary["planner"] == chosen["name"]
    figures = {f["kind"]: f for f in summary["figures"]}
    assert figures["acquisition"]["saving"] == pytest.approx(
        1 - chosen["total_cost"] / planners[0]["total_cost"])
    assert set(figures) == {"acquisition", *(k for k in ("evaluation", "contexts", "covering")
                                             if report.get(k))}
    if report.get("evaluation"):
        costs = [p["cost"] for p in report["evaluation"]["planners"]]
        assert figures["evaluation"]["saving"] == pytest.approx(1 - min(costs[1:]) / costs[0])
    for row in summary["patterns"]:  # the patterns saving most, each as the planner has it
        entry = chosen["patterns"][row["pattern"]]
        assert (row["cost"], row["latency"]) == (entry["cost"], entry["latency"])
        assert row["trivial"] == planners[0]["patterns"][row["pattern"]]["cost"] > row["cost"]
    markdown = _markdown_text((reports / f"{name}.md").read_text())
    page = Elements((reports / f"{name}.html").read_text()).text
    for text in (summary["headline"], *(f["text"] for f in summary["figures"]),
                 *(f["figure"] for f in summary["figures"]), *summary["notes"]):
        plain = text.replace("`", "")
        assert plain in markdown and plain in page, plain
    assert markdown.index(summary["headline"]) < markdown.index("Planners side by side")
    assert page.index(summary["headline"]) < page.index("Planners side by side")


def _markdown_text(markdown: str) -> str:
    """The text a Markdown renderer shows, markup gone."""
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("commonmark").enable(["table"]).render(markdown)
    return "".join(Elements(rendered).text)


class Elements(HTMLParser):
    """The text of an HTML document, script and style left out, in one string."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.feed(html)
        self.text = "".join(self.parts)

    def handle_starttag(self, tag, attrs):
        self.skip += tag in ("script", "style")

    def handle_endtag(self, tag):
        self.skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def test_pareto_notes_say_why_the_cheapest_plan_is_not_chosen(reports, tmp_path):
    """trading_rules: exactly the patterns whose chosen plan costs more than the cheapest on
    their front have a note, each for the reason `cepplan optimize` records (one step on the
    local engine), the cheapest plan as the front has it."""
    report = json.loads((reports / "trading_rules.json").read_text())
    dearer = {}
    for name, front in report["pareto"].items():
        chosen = next(p for p in front if p["chosen"])
        cheapest = min(front, key=lambda p: p["cost"])
        if cheapest["cost"] < chosen["cost"] * (1 - 1e-9):
            dearer[name] = cheapest
    assert dearer and set(report["pareto_notes"]) == set(dearer)
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", str(EXAMPLES / "trading_rules" / "workload.json"), "-o",
                   str(plan), "-q").returncode == 0
    one_step = json.loads(plan.read_text())["provenance"]["engine_steps"]["one_step"]
    for name, note in report["pareto_notes"].items():
        assert (note["steps"], note["cost"], note["latency"]) == (
            dearer[name]["steps"], dearer[name]["cost"], dearer[name]["latency"])
        assert note["reason"] == "engine_steps" and name in one_step
    page = (reports / "trading_rules.html").read_text()
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page)
    assert sorted(c.split(" ")[0] for c in captions) == sorted(dearer)


def test_a_latency_bound_is_named_when_it_keeps_the_cheapest_plan_out():
    """fraud with account_takeover bounded to 1 step: its 2-step plan is cheaper; the note,
    the summary, the Markdown and the front's caption on the page say the bound keeps it
    out."""
    from cepplan.planner.compose import Settings
    from cepplan.report.compare import compare
    from cepplan.report.render_html import render_html
    from cepplan.report.render_md import render_markdown
    from cepplan.workload import build_workload

    raw = json.loads((EXAMPLES / "fraud" / "workload.json").read_text())
    pattern = next(p for p in raw["patterns"] if p["name"] == "account_takeover")
    pattern["latency"] = {"max_steps": 1}
    workload = build_workload(raw, file="workload.json")
    report = compare(workload, workload.statistics, Settings(time_limit=2)).report
    front = report["pareto"]["account_takeover"]
    chosen = next(p for p in front if p["chosen"])
    cheapest = min(front, key=lambda p: p["cost"])
    assert chosen["latency"] == 1 < cheapest["latency"] and cheapest["cost"] < chosen["cost"]
    note = report["pareto_notes"]["account_takeover"]
    assert note["reason"] == "latency_bound" and note["latency"] == cheapest["latency"]
    assert "latency bound of 1" in note["text"]
    assert any("account_takeover" in n and "latency bound" in n
               for n in report["summary"]["notes"])
    assert note["text"] in _markdown_text(render_markdown(report))
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", render_html(report))
    assert [html.unescape(c) for c in captions] == [note["text"]]


def test_compare_refuses_a_directory_as_output_before_planning(tmp_path):
    (tmp_path / "report.html").mkdir()
    done = cepplan("compare", str(EXAMPLES / "fraud" / "workload.json"), "-o",
                   str(tmp_path / "report.html"))
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "is a directory" in done.stderr


def test_compare_bad_workload_exits_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "cepplan.workload/1"}')
    done = cepplan("compare", str(bad), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "bad.json" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_compare_with_events_measures_every_plan_like_cepplan_run(tmp_path):
    """--events runs each plan in-process: the rows each plan sends and the matches equal what
    `cepplan run` measures for the same plan, and every plan finds the same matches."""
    example = EXAMPLES / "fraud"
    done = cepplan("compare", str(example / "workload.json"), "--events",
                   str(example / "events.csv"), "-o", str(tmp_path / "r.html"), "-q")
    assert done.returncode == 0, done.stderr
    measured = json.loads((tmp_path / "r.json").read_text())["measured"]
    assert measured["matches_equal"]
    runs = {r["planner"]: r for r in measured["runs"]}
    assert runs["trivial"]["measured_factor"] == 1.0
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", str(example / "workload.json"), "-o", str(plan), "--solver",
                   "dp", "--search", "none").returncode == 0
    for kind, name in (("plan", "dp"), ("trivial", "trivial")):
        out = tmp_path / kind
        run = cepplan("run", str(plan), str(example / "events.csv"), "-o", str(out),
                      "--plan-kind", kind, "-q")
        assert run.returncode == 0, run.stderr
        metrics = json.loads((out / "metrics.json").read_text())
        assert runs[name]["rows_to_matchers"] == metrics["rows_to_matchers"]
        assert runs[name]["matches"] == sum(metrics["matches"].values())
        assert runs[name]["partial_matches"] == pytest.approx(
            sum(p["per_window"] for p in metrics["partial_matches"].values()))
    assert runs["dp"]["rows_to_matchers"] < runs["trivial"]["rows_to_matchers"]
    figures = {f["kind"]: f for f in json.loads((tmp_path / "r.json").read_text())[
        "summary"]["figures"]}  # the summary tells what was measured too
    assert (figures["measured"]["baseline"], figures["measured"]["value"]) == (
        runs["trivial"]["rows_to_matchers"], runs["dp"]["rows_to_matchers"])


def _without_contexts(example, tmp_path):
    """The example's workload.json with its contexts removed: every pattern always runs."""
    raw = json.loads((example / "workload.json").read_text())
    raw.pop("contexts")
    path = tmp_path / "independent.json"
    path.write_text(json.dumps(raw))
    return path


@pytest.fixture(scope="module")
def traffic(tmp_path_factory):
    """The traffic example on its first 600 events: statistics with the share of time each
    set of contexts held, and a report run with and without contexts on those events."""
    folder = tmp_path_factory.mktemp("traffic")
    example = EXAMPLES / "traffic"
    events = folder / "events.csv"
    events.write_text("".join((example / "events.csv").read_text().splitlines(True)[:601]))
    stats = folder / "stats.json"
    done = cepplan("stats", str(events), "-w", str(example / "workload.json"), "-o", str(stats),
                   "--engine", "local", "-q")
    assert done.returncode == 0, done.stderr
    done = cepplan("compare", str(example / "workload.json"), "--stats", str(stats), "--events",
                   str(events), "-o", str(folder / "r.html"), "-q")
    assert done.returncode == 0, done.stderr
    return folder, json.loads((folder / "r.json").read_text())


def test_contexts_with_and_without_equal_separate_optimize_runs(traffic, tmp_path):
    """The context-independent plan is `cepplan optimize` on the workload without contexts;
    the cost with contexts weighs each grouped window of `cepplan optimize --stats` by the
    share of time it held; every group's suspended patterns are the others."""
    folder, report = traffic
    example = EXAMPLES / "traffic"
    contexts = report["contexts"]
    variants = {v["name"]: v["total_cost"] for v in contexts["variants"]}
    alone, stats = tmp_path / "alone.json", tmp_path / "stats.json"
    independent = _without_contexts(example, tmp_path)
    assert cepplan("stats", str(folder / "events.csv"), "-w", str(independent), "-o",
                   str(stats), "--engine", "local", "-q").returncode == 0
    assert cepplan("optimize", str(independent), "--stats", str(stats), "-o", str(alone),
                   "--solver", "dp", "-q").returncode == 0
    plan = json.loads(alone.read_text())
    assert variants["context-independent"] == pytest.approx(
        plan["provenance"]["total_expected_cost"], rel=1e-9)
    aware = tmp_path / "aware.json"
    assert cepplan("optimize", str(example / "workload.json"), "--stats",
                   str(folder / "stats.json"), "-o", str(aware), "--solver", "dp",
                   "-q").returncode == 0
    groups = json.loads(aware.read_text())["contexts"]["groups"]
    assert [g["contexts"] for g in contexts["groups"]] == [g["contexts"] for g in groups]
    shares = [g["expected_time_share"] for g in groups]
    assert sum(shares) == pytest.approx(1.0, abs=1e-3)
    assert variants["with contexts"] == pytest.approx(
        sum(g["expected_time_share"] * g["expected_cost"] for g in groups), rel=1e-9)
    assert variants["with contexts"] < variants["context-independent"]
    names = {p["pattern"] for p in contexts["patterns"]}
    for group in contexts["groups"]:
        assert set(group["suspended"]) == names - set(group["patterns"])
    for entry in contexts["patterns"]:
        assert entry["independent"]["cost"] == pytest.approx(
            plan["patterns"][entry["pattern"]]["detection"]["expected_cost"])


def test_compare_runs_the_plan_with_and_without_contexts_like_cepplan_run(traffic, tmp_path):
    """With --events, the context-aware and context-independent runs equal `cepplan run` of
    each plan, and the independent matches kept to the windows equal the context-aware ones."""
    folder, report = traffic
    example = EXAMPLES / "traffic"
    measured = report["measured"]["contexts"]
    assert measured["matches_equal"]
    runs = {r["variant"]: r for r in measured["runs"]}
    for variant, workload in (("with contexts", example / "workload.json"),
                              ("context-independent", _without_contexts(example, tmp_path))):
        plan = tmp_path / "plan.json"
        assert cepplan("optimize", str(workload), "-o", str(plan), "--solver", "dp",
                       "-q").returncode == 0  # which plan does not change the matches
        out = tmp_path / variant.replace(" ", "-")
        done = cepplan("run", str(plan), str(folder / "events.csv"), "-o", str(out), "-q")
        assert done.returncode == 0, done.stderr
        metrics = json.loads((out / "metrics.json").read_text())
        assert runs[variant]["matches"] == sum(metrics["matches"].values())
        assert runs[variant]["rows_to_matchers"] == metrics["rows_to_matchers"]
        for entry in measured["patterns"]:
            key = ("matches_with_contexts" if variant == "with contexts"
                   else "matches_independent")
            assert entry[key] == metrics["matches"][entry["pattern"]]
    for entry in measured["patterns"]:
        assert entry["matches_independent_in_windows"] == entry["matches_with_contexts"]
        assert entry["matches_with_contexts"] <= entry["matches_independent"]
    assert any(e["matches_with_contexts"] < e["matches_independent"]
               for e in measured["patterns"])  # the windows do keep matches out


def test_covering_with_and_without_equal_optimize_and_run_per_solver(tmp_path):
    """Each covering solver's cover and expected executions equal `cepplan optimize
    --covering-solver`; measured, they equal `cepplan run` of that plan, and the exact
    CP-SAT cover never executes more than the greedy ones."""
    example = EXAMPLES / "mobile"
    events = tmp_path / "events.jsonl"
    events.write_text("".join((example / "events.jsonl").read_text().splitlines(True)[:2000]))
    done = cepplan("compare", str(example / "workload.json"), "--events", str(events), "-o",
                   str(tmp_path / "r.html"), "-q")
    assert done.returncode == 0, done.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    measured = {r["solver"]: r for r in report["measured"]["covering"]}
    assert set(measured) == {"cpsat", "mqc", "mnh"}
    for solver in report["covering"]["solvers"]:
        plan = tmp_path / f"{solver['solver']}.json"
        assert cepplan("optimize", str(example / "workload.json"), "-o", str(plan),
                       "--covering-solver", solver["solver"], "-q").returncode == 0
        section = json.loads(plan.read_text())["covering"]
        assert solver["executions_with_reuse"] == pytest.approx(
            section["expected"]["executions_with_reuse"])
        assert solver["executions_without_reuse"] == pytest.approx(
            section["expected"]["executions_without_reuse"])
        for operator, group in zip(solver["operators"], section["groups"], strict=True):
            assert operator["cover"] == group["expected"]["covering_queries"]
            assert operator["cover_size"] == len(group["expected"]["covering_queries"])
            assert operator["queries"] == len(group["queries"])
        assert measured[solver["solver"]]["threshold_violations"] == 0
        if solver["solver"] != "mnh":
            continue
        out = tmp_path / "run"  # one solver's run against `cepplan run` (time)
        assert cepplan("run", str(plan), str(events), "-o", str(out), "-q").returncode == 0
        metrics = json.loads((out / "metrics.json").read_text())["covering"]
        row = measured[solver["solver"]]
        assert row["executions_with_reuse"] == metrics["executions_with_reuse"]
        assert row["executions_without_reuse"] == metrics["selections"]
    assert measured["cpsat"]["executions_with_reuse"] <= min(
        measured["mqc"]["executions_with_reuse"], measured["mnh"]["executions_with_reuse"])
    pairs = report["covering"]["pairs"]
    assert any(p["meets_thresholds"] for p in pairs) and not all(
        p["meets_thresholds"] for p in pairs)
    for pair in pairs:
        limits = pair["thresholds"]
        assert pair["meets_thresholds"] == (pair["precision"] >= limits["precision"]
                                            and pair["recall"] >= limits["recall"]
                                            and pair["disparity"] >= limits.get("disparity", 0))


def test_shared_subtrees_name_the_same_events_for_every_user(reports):
    """Each shared subtree binds, in every pattern using it, the same event types in the same
    tree shape; the table lists exactly the patterns the matrix shows."""
    from cepplan.report.sharing import leaves
    from cepplan.workload import load_workload

    report = json.loads((reports / "trading_rules.json").read_text())
    workload = load_workload(EXAMPLES / "trading_rules" / "workload.json")
    sharing = report["sharing"]
    assert sharing["nodes"]
    for node in sharing["nodes"]:
        assert len(node["patterns"]) >= 2 and node["patterns"] == list(node["users"])
        shapes = set()
        for name, tree in node["users"].items():
            pattern = workload.pattern(name)
            assert len(leaves(tree)) == node["size"]
            shapes.add(json.dumps(_typed(tree, pattern)))
        assert len(shapes) == 1
        first = workload.pattern(node["patterns"][0])
        for var in leaves(node["users"][first.name]):
            assert f"{var}:{first.operand(var).event_type}" in node["subtree"]
    used = {p for n in sharing["nodes"] for p in n["patterns"]}
    assert set(sharing["patterns"]) == used


def _typed(tree, pattern):
    """The tree with each variable replaced by its event type, children in a fixed order
    (a join's two sides commute)."""
    if isinstance(tree, list):
        return sorted((_typed(t, pattern) for t in tree), key=json.dumps)
    return pattern.operand(tree).event_type


def test_subtree_is_written_in_the_workload_language():
    from cepplan.report.sharing import subtree_text, tree_text
    from cepplan.workload.loader import build_workload

    raw = {"format": "cepplan.workload/1", "name": "w", "time_unit": "s",
           "event_types": {t: {"attributes": {"price": "double"}}
                           for t in ("GOOG", "MSFT", "AAPL")},
           "patterns": [{"name": "p", "structure": ["SEQ", "a:GOOG", "b:MSFT", "c:AAPL"],
                         "where": ["a.price < b.price", "c.price > 3", "a.price < c.price"],
                         "within": "5s"}],
           "statistics": {"rates": {"GOOG": 1, "MSFT": 1, "AAPL": 1}}}
    pattern = build_workload(raw, file="w.json").pattern("p")
    assert subtree_text(pattern, ["b", "a"]) == "SEQ(a:GOOG, b:MSFT) where a.price < b.price"
    assert subtree_text(pattern, [["a", "b"], "c"]) == (
        "SEQ(a:GOOG, b:MSFT, c:AAPL) where a.price < b.price and c.price > 3 and "
        "a.price < c.price")
    assert tree_text([["a", "b"], "c"]) == "(a ⋈ b) ⋈ c"


def test_contexts_comparison_fails_loudly_when_a_match_is_missing(traffic, tmp_path):
    """The with/without-contexts comparison is not vacuous: drop one context-aware match and
    that pattern, and the whole comparison, are reported unequal."""
    from cepplan.planner.compose import Settings
    from cepplan.planner.optimize import optimize
    from cepplan.report.measure import Run, Runner, _contexts_measured
    from cepplan.report.variants import independent_workload
    from cepplan.workload import load_workload

    folder, _ = traffic
    workload = load_workload(EXAMPLES / "traffic" / "workload.json")
    runner = Runner(workload, [str(folder / "events.csv")], tmp_path, lambda _: None)
    aware = runner.run("aware", optimize(workload, workload.statistics, Settings()).plan)
    alone = runner.run("alone", optimize(independent_workload(workload), workload.statistics,
                                         Settings()).plan, contexts=False)
    assert _contexts_measured(aware, alone, workload)["matches_equal"]
    part = next(p for p in (aware.directory / "matches").iterdir() if p.name.startswith("part-"))
    lines = part.read_text().splitlines(True)
    dropped = json.loads(lines[-1])["pattern"]
    part.write_text("".join(lines[:-1]))
    tampered = _contexts_measured(Run(aware.metrics, aware.seconds, aware.directory), alone,
                                  workload)
    assert not tampered["matches_equal"]
    assert [p["pattern"] for p in tampered["patterns"] if not p["equal"]] == [dropped]


def test_plans_compared_on_their_timed_out_partial_matches_too(tmp_path):
    """Two runs with the same matches but different timed-out partial matches (under
    OUT/timed_out/) are not the same output: `compare` tells the plans apart."""
    from cepplan.report.measure import Run

    match = '{"pattern": "p", "events": {"a": {"id": 1, "type": "A", "ts": 0.0}}}\n'
    runs = []
    for at in (4.0, 5.0):
        out = tmp_path / str(at)
        (out / "matches").mkdir(parents=True)
        (out / "timed_out").mkdir()
        (out / "matches" / "part-00000.jsonl").write_text(match)
        (out / "timed_out" / "part-00000.jsonl").write_text(
            f'{{"pattern": "p", "timed_out": {{"k": 1, "at": {at}}}, "events": '
            '{"a": {"id": 2, "type": "A", "ts": 1.0}}}\n')
        runs.append(Run({}, 0.0, out))
    assert runs[0].digest != runs[1].digest
    assert [json.loads(t)["timed_out"]["at"] for t in runs[0].matches()["p"]
            if "timed_out" in json.loads(t)] == [4.0]
