"""The report page in a real headless Chromium (Debian's, driven by Playwright; nothing is
downloaded): it loads with no console errors, the summary comes first and fits one screen, every
plot renders with a legend, Pareto points carry their plans, plans per pattern are a pivot, tables
sort, long parts start collapsed, and the layout holds on a laptop screen, a narrow window and in
print."""

from __future__ import annotations

import io
import shutil

import numpy as np
import pytest

from cepplan.planner.compose import Settings
from cepplan.report.compare import compare
from cepplan.report.measure import measure_plans
from cepplan.report.write import write_report
from cepplan.workload import load_workload
from tests.conftest import EXAMPLES

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert CHROMIUM, "Debian's chromium is needed (the README's test command installs it)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield launched
        launched.close()


PAGES = {  # example, its events file, events run: each page shows other sections
    "trading_rules": ("events.csv", 2000),  # evaluation searches, shared subtrees
    "traffic": ("events.csv", 1200),  # contexts with and without
    "mobile": ("events.jsonl", 2000),  # covering with and without
}


@pytest.fixture(scope="module", params=sorted(PAGES))
def page_url(request, tmp_path_factory):
    """A page per example with its own sections: 50 overlapping rules (every planner, the
    searches' cost over time, shared subtrees by pattern), road traffic in contexts, mobile
    consumer queries; each run on its first events (predicted against measured)."""
    name = request.param
    events_name, count = PAGES[name]
    folder = tmp_path_factory.mktemp(name)
    example = EXAMPLES / name
    events = folder / events_name
    lines = (example / events_name).read_text().splitlines(True)
    events.write_text("".join(lines[:count + (events_name.endswith(".csv"))]))
    workload = load_workload(example / "workload.json")
    comparison = compare(workload, workload.statistics, Settings(time_limit=2.0))
    report = comparison.report
    report["measured"] = measure_plans(report, comparison.plans, workload, [str(events)],
                                       shared=comparison.shared,
                                       independent=comparison.independent,
                                       covering=comparison.covering)
    assert report["measured"]["matches_equal"]
    paths = write_report(report, folder / "report.html")
    return paths[".html"].as_uri(), report


def _notation(steps) -> str:
    return " -> ".join(",".join(step) for step in steps)


def _not_cheapest(report) -> set[str]:
    """The patterns whose chosen plan costs more than the cheapest on their Pareto front."""
    return {name for name, front in report["pareto"].items()
            if any(p["chosen"] for p in front)
            and min(p["cost"] for p in front) < next(p["cost"] for p in front if p["chosen"])
            * (1 - 1e-9)}


def _labels(report) -> list[str]:
    """The aria-label of every plot the page must draw, in page order."""
    trivial = report["planners"][0]["total_cost"]
    labels = ["Saving per planner"] if any(
        p["total_cost"] < trivial * (1 - 1e-9) for p in report["planners"][1:]) else []
    traded = [name for name, front in report["pareto"].items() if len(front) > 1]
    if len(traded) > 6:  # the fronts that need a word first, the others behind a click
        first = _not_cheapest(report)
        traded = [n for n in traded if n in first] + [n for n in traded if n not in first]
    labels += [f"Pareto front of {name}" for name in traded]
    if report.get("evaluation"):
        labels += ["Saving per evaluation plan", "Search cost over time"]
    if report.get("sharing"):
        labels.append("Shared subtrees by pattern")
        if report["measured"].get("shared_nodes"):
            labels.append("Predicted against measured partial matches per shared subtree")
    if report.get("contexts"):
        labels.append("Patterns each grouped window runs")
    if report.get("covering"):
        labels += ["Operator executions with and without reuse",
                   "Neighbour pairs against quality thresholds"]
    labels.append("Predicted against measured transmission factor")
    if any(r.get("predicted_partial_matches") and r.get("partial_matches")
           for r in report["measured"]["runs"]):
        labels.append("Predicted against measured partial matches per window")
    return labels


def _open(browser, url, width):
    page = browser.new_page(viewport={"width": width, "height": 900})
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(url)
    return page, errors


def _open_details(page) -> None:
    """Open every collapsed part, as a reader clicking each ▸ line would."""
    summaries = page.locator("details:not([open]) > summary")
    while summaries.count():
        summaries.first.click()


def test_page_loads_without_errors_and_every_plot_renders(browser, page_url):
    url, report = page_url
    page, errors = _open(browser, url, 1280)
    assert errors == []
    _open_details(page)
    plots = page.locator("figure svg")
    labels = _labels(report)
    assert [plots.nth(i).get_attribute("aria-label") for i in range(plots.count())] == labels
    boxes = [plots.nth(i).bounding_box() for i in range(plots.count())]
    for box in boxes:
        assert box["width"] > 150 and box["height"] > 100
    for i, a in enumerate(boxes):  # no two plots overlap
        for b in boxes[i + 1:]:
            assert (a["x"] + a["width"] <= b["x"] + 1 or b["x"] + b["width"] <= a["x"] + 1
                    or a["y"] + a["height"] <= b["y"] + 1 or b["y"] + b["height"] <= a["y"] + 1)
    fronts = [box for box, label in zip(boxes, labels, strict=True)
              if label.startswith("Pareto front")]
    if len(fronts) > 1:
        assert len({round(b["y"]) for b in fronts}) < len(fronts)  # side by side
    page.close()


def test_every_plot_has_a_legend(browser, page_url):
    """Colours and marks are explained on the plot itself."""
    url, report = page_url
    page, _ = _open(browser, url, 1280)
    plots = page.locator("figure svg")
    assert plots.count() == len(_labels(report))
    for i in range(plots.count()):
        plot = plots.nth(i)
        assert plot.locator("g[id^='legend']").count() >= 1, plot.get_attribute("aria-label")
    page.close()


def test_summary_comes_first_and_fits_one_screen(browser, page_url):
    """The first section says, on the first screen of a laptop, what the plan saves against
    the trivial plan — events sent, and partial matches, contexts, covering and the measured
    rows where the report has them — each saving as the figures in report.json give it."""
    url, report = page_url
    page, errors = _open(browser, url, 1280)
    summary = page.locator("section").first
    assert summary.get_attribute("id") == "summary" and summary.is_visible()
    box = summary.bounding_box()
    assert box["y"] + box["height"] <= 900, box
    cards = {summary.locator(".card .what").nth(i).inner_text():
             summary.locator(".card .figure").nth(i).inner_text()
             for i in range(summary.locator(".card").count())}
    trivial = report["planners"][0]["total_cost"]
    best = min(p["total_cost"] for p in report["planners"][1:])
    expected = {"Events sent (acquisition)": best / trivial}
    if report.get("evaluation"):
        costs = [p["cost"] for p in report["evaluation"]["planners"]]
        expected["Partial matches (evaluation)"] = min(costs[1:]) / costs[0]
    if report.get("contexts"):
        totals = {v["name"]: v["total_cost"] for v in report["contexts"]["variants"]}
        expected["Events sent with contexts"] = (
            None if totals["with contexts"] is None
            else totals["with contexts"] / totals["context-independent"])
    if report.get("covering"):
        solver = min(report["covering"]["solvers"], key=lambda s: s["executions_with_reuse"])
        expected["Operator executions (covering)"] = (solver["executions_with_reuse"]
                                                      / solver["executions_without_reuse"])
    runs = {r["planner"]: r["rows_to_matchers"] for r in report["measured"]["runs"]}
    chosen = min(report["planners"][1:], key=lambda p: p["total_cost"])["name"]
    expected["Rows to matchers (measured)"] = runs[chosen] / runs["trivial"]
    assert set(cards) == set(expected)
    for title, ratio in expected.items():
        assert _ratio(cards[title]) == pytest.approx(ratio, abs=0.0006, rel=0.03), title
    assert errors == []
    page.close()


def _ratio(figure: str) -> float | None:
    """What share of the baseline remains, read back from a card's figure."""
    if figure == "not costed":
        return None
    if figure == "no saving":
        return 1.0
    amount, way = figure.split(" ", 1)
    if amount.endswith("×"):
        return 1 / float(amount[:-1])
    share = float(amount.rstrip("%")) / 100
    return 1 - share if way == "fewer" else 1 + share


def test_page_is_a_few_screens_tall_with_the_details_collapsed(browser, page_url):
    """The long parts (every pattern's plans, most Pareto fronts, long tables) start
    collapsed: trading_rules' 50 patterns were a 14,000-pixel page."""
    url, _ = page_url
    page, _ = _open(browser, url, 1280)
    assert page.evaluate("document.documentElement.scrollHeight") <= 5000
    page.close()


def test_pareto_points_are_labelled_and_unchosen_cheapest_explained(browser, page_url):
    """Each point of each drawn Pareto front is labelled with its plan; a pattern whose
    chosen plan is not its cheapest has its front drawn first, with a caption naming the
    pattern and why — the first six on view, the others one click away — and the summary
    names the first four and counts the others."""
    url, report = page_url
    page, _ = _open(browser, url, 1280)
    explained = _not_cheapest(report)
    summary = page.locator("section#summary").inner_text()
    in_order = [name for name in report["pareto"] if name in explained]
    assert sum(name in summary for name in in_order) == min(len(in_order), 4)
    if len(in_order) > 4:
        assert f"and {len(in_order) - 4} more" in summary
    for position, name in enumerate(in_order):
        figure = page.locator("figure", has=page.locator(
            f"svg[aria-label='Pareto front of {name}']"))
        assert figure.is_visible() == (position < 6)
    _open_details(page)
    for name in in_order:
        figure = page.locator("figure", has=page.locator(
            f"svg[aria-label='Pareto front of {name}']"))
        caption = figure.locator("figcaption").inner_text()
        assert name in caption and "engine" in caption
    for name, front in report["pareto"].items():
        plot = page.locator(f"svg[aria-label='Pareto front of {name}']")
        if len(front) == 1:
            assert plot.count() == 0
            continue
        texts = plot.locator("text").all_text_contents()
        for point in front:
            assert any(_notation(point["steps"]) in t for t in texts), (name, point)
        assert any("chosen" in t for t in texts)
        assert any("cheapest (not chosen)" in t for t in texts) == (name in explained)
    page.close()


def test_plans_per_pattern_are_a_pivot_with_the_cheapest_marked(browser, page_url):
    """Patterns as rows, planners as columns, each cell the planner's plan; in a row where
    the planners' plans differ in cost the cheapest are marked, in a row where all cost the
    same none is."""
    url, report = page_url
    page, _ = _open(browser, url, 1280)
    _open_details(page)
    table = page.locator("section#patterns table")
    planners = [p["name"] for p in report["planners"]]
    assert table.locator("th").all_inner_texts() == ["pattern", *planners]
    rows = table.locator("tbody tr")
    assert rows.count() == len(report["workload"]["patterns"])
    for i, name in enumerate(report["workload"]["patterns"]):
        cells = rows.nth(i).locator("td")
        assert cells.first.inner_text() == name
        costs = [p["patterns"][name]["cost"] for p in report["planners"]]
        low = min(costs)
        marked = [j for j in range(len(planners))
                  if cells.nth(j + 1).locator(".best").count()]
        cheapest = [j for j, c in enumerate(costs) if c <= low * (1 + 1e-9)]
        assert marked == ([] if len(cheapest) == len(costs) else cheapest), name
        for j, planner in enumerate(report["planners"]):
            assert _notation(planner["patterns"][name]["steps"]) in cells.nth(j + 1).inner_text()
    page.close()


def test_new_sections_show_their_tables(browser, page_url):
    """Shared subtrees, grouped context windows and covers are tables a reader can sort,
    one row per shared subtree, grouped window, and solver; a table of more than ten rows
    starts collapsed."""
    url, report = page_url
    page, errors = _open(browser, url, 1280)
    sections = {"sharing": ("nodes", 0), "contexts": ("groups", 1), "covering": ("solvers", 0)}
    tables = {}
    for key, (rows, nth) in sections.items():
        section = page.locator(f"section#{key}")
        if not report.get(key):
            assert section.count() == 0
            continue
        count = len(report[key][rows])
        tables[key] = (section.locator("table").nth(nth), count)  # contexts: variants first
        assert tables[key][0].locator("th").first.is_visible() == (count <= 10)
    _open_details(page)
    for table, count in tables.values():
        assert table.locator("tbody tr").count() == count
        assert table.locator("th").first.is_visible()
    assert errors == []
    page.close()


def test_tables_sort_by_a_clicked_column(browser, page_url):
    url, report = page_url
    page, errors = _open(browser, url, 1280)
    table = page.locator("section#planners table")
    header = table.locator("th", has_text="modelled cost")

    def costs() -> list[float]:
        cells = table.locator("tbody tr td:nth-child(3)")
        return [float(cells.nth(i).get_attribute("data-v")) for i in range(cells.count())]

    header.click()
    assert costs() == sorted(p["total_cost"] for p in report["planners"])
    header.click()
    assert costs() == sorted((p["total_cost"] for p in report["planners"]), reverse=True)
    assert errors == []
    page.close()


@pytest.mark.parametrize("width", [1280, 800])
def test_screenshot_layout_fits_the_window(browser, page_url, width):
    """The page never scrolls sideways, and its screenshot shows content, not a blank page."""
    import matplotlib.image

    url, _ = page_url
    page, _ = _open(browser, url, width)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    _open_details(page)  # opened, nothing scrolls sideways either
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    picture = matplotlib.image.imread(io.BytesIO(page.screenshot(full_page=True)), "png")
    gray = picture[..., :3].mean(axis=2)
    assert gray.shape[1] == width
    assert (gray < 0.3).mean() > 0.002  # text and plots are drawn
    assert np.std(gray) > 0.05
    page.close()


def test_page_prints(browser, page_url):
    url, _ = page_url
    page, errors = _open(browser, url, 1280)
    page.emulate_media(media="print")
    pdf = page.pdf(format="A4")
    assert pdf.startswith(b"%PDF") and pdf.count(b"/Type /Page") >= 2
    assert errors == []
    page.close()
