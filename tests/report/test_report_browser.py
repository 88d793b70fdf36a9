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


@pytest.fixture(scope="module")
def page_url(tmp_path_factory):
    """The richest page: 50 overlapping rules (every planner, the evaluation searches' cost
    over time) run on the first 2,000 of their events (predicted against measured)."""
    folder = tmp_path_factory.mktemp("page")
    example = EXAMPLES / "trading_rules"
    events = folder / "events.csv"
    events.write_text("".join((example / "events.csv").read_text().splitlines(True)[:2001]))
    workload = load_workload(example / "workload.json")
    comparison = compare(workload, workload.statistics, Settings(time_limit=2.0))
    report = comparison.report
    report["measured"] = measure_plans(report, comparison.plans, workload, [str(events)])
    assert report["measured"]["matches_equal"]
    paths = write_report(report, folder / "report.html")
    return paths[".html"].as_uri(), report


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
    fronts = sum(1 for f in report["pareto"].values() if f)
    boxes = [page.locator("figure svg").nth(i).bounding_box()
             for i in range(page.locator("figure svg").count())]
    assert len(boxes) == 1 + fronts + 2  # cost bars, fronts, search over time, measured
    for label in ("Modelled cost per planner", "Search cost over time",
                  "Predicted against measured transmission factor"):
        assert page.locator(f"svg[aria-label='{label}']").count() == 1
    for box in boxes:
        assert box["width"] > 150 and box["height"] > 100
    for i, a in enumerate(boxes):  # no two plots overlap
        for b in boxes[i + 1:]:
            assert (a["x"] + a["width"] <= b["x"] + 1 or b["x"] + b["width"] <= a["x"] + 1
                    or a["y"] + a["height"] <= b["y"] + 1 or b["y"] + b["height"] <= a["y"] + 1)
    rows = {round(b["y"]) for b in boxes[1:1 + fronts]}
    assert len(rows) < fronts  # the Pareto fronts sit side by side on a laptop screen
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
