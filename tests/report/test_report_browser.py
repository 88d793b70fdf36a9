"""The report page in a real headless Chromium (Debian's, driven by Playwright; nothing is
downloaded): it loads with no console errors, every plot renders, tables sort, and the layout
holds on a laptop screen, a narrow window and in print."""

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


def _labels(report) -> list[str]:
    """The aria-label of every plot the page must draw, in page order."""
    labels = ["Modelled cost per planner"]
    labels += [f"Pareto front of {name}" for name, front in report["pareto"].items()
               if len(front) > 1]
    if report.get("evaluation"):
        labels.append("Search cost over time")
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


def test_page_loads_without_errors_and_every_plot_renders(browser, page_url):
    url, report = page_url
    page, errors = _open(browser, url, 1280)
    assert errors == []
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
    fronts = sum(1 for label in labels if label.startswith("Pareto front"))
    if fronts > 1:
        rows = {round(b["y"]) for b in boxes[1:1 + fronts]}
        assert len(rows) < fronts  # the Pareto fronts sit side by side on a laptop screen
    page.close()


def test_new_sections_show_their_tables(browser, page_url):
    """Shared subtrees, grouped context windows and covers are tables a reader can sort,
    one row per shared subtree, grouped window, and solver."""
    url, report = page_url
    page, errors = _open(browser, url, 1280)
    sections = {"sharing": ("Shared subtrees, by whom", len(report.get("sharing", {})
                                                             .get("nodes", ()))),
                "contexts": ("Contexts: with and without", len(report.get("contexts", {})
                                                                .get("groups", ()))),
                "covering": ("Covering: with and without reuse", len(report.get(
                    "covering", {}).get("solvers", ())))}
    for key, (title, rows) in sections.items():
        heading = page.locator("h2", has_text=title)
        if not report.get(key):
            assert heading.count() == 0
            continue
        table = page.locator(f"h2:has-text('{title}') ~ div.wide table").nth(
            1 if key == "contexts" else 0)  # contexts: the variants come first
        assert table.locator("tbody tr").count() == rows
        assert table.locator("th").first.is_visible()
    assert errors == []
    page.close()


def test_tables_sort_by_a_clicked_column(browser, page_url):
    url, report = page_url
    page, errors = _open(browser, url, 1280)
    table = page.locator("table").first
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
