"""Users' names in the reports stay text. A workload, context, operator or query name, or a
predicate's string literal, holding HTML (`<script>`, `<img onerror>`, `<svg onload>`), Markdown
(links, code spans, emphasis, table pipes) or matplotlib mathtext (`$\\undefinedmacro$`) is shown
as written: report.md rendered by a real Markdown renderer (markdown-it, raw HTML on, as on
code hosts before their sanitiser) and report.html parsed by Python's HTML parser hold only
the report's own elements, and the names as their text."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from markdown_it import MarkdownIt

from cepplan.planner.compose import Settings
from cepplan.report.compare import compare
from cepplan.report.render_html import render_html
from cepplan.report.render_md import render_markdown
from cepplan.workload import build_workload
from tests.hostile_workloads import mobile_named, shared_named, traffic_named
from tests.in_process import cepplan

NAME = "<img src=x onerror=alert(1)><svg onload=alert(2)>[x](javascript:alert(3)) *b* a__b__"
CONTEXT = "cong$\\undefinedmacro$<script>alert(4)</script>|`c`_d_&amp;"
OPERATOR = "avg$\\frac$<b>x</b>"
QUERY = "<img src=x onerror=alert(5)>"
LITERAL = "`</code><script>alert(6)</script>|x``"

WORKLOADS = {
    "contexts": (traffic_named(NAME, CONTEXT, "exit"), [NAME, CONTEXT]),
    "covering": (mobile_named(NAME, OPERATOR, QUERY), [NAME, OPERATOR, QUERY]),
    "sharing": (shared_named(NAME, LITERAL), [NAME, LITERAL]),
}
MARKDOWN_TAGS = {"h1", "h2", "p", "strong", "code", "table", "thead", "tbody", "tr", "th",
                 "td"}


class Elements(HTMLParser):
    """Every start tag with its attributes, and the text, of an HTML document."""

    def __init__(self, html: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(html)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def reports() -> dict[str, dict]:
    found = {}
    for section, (raw, _) in WORKLOADS.items():
        workload = build_workload(raw, file="workload.json")
        found[section] = compare(workload, workload.statistics, Settings(time_limit=2)).report
        assert found[section].get(section), f"the {section} section is missing"
    return found


@pytest.mark.parametrize("section", sorted(WORKLOADS))
def test_markdown_renders_names_as_text(reports, section):
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(
        render_markdown(reports[section]))
    document = Elements(rendered)
    assert {tag for tag, _ in document.tags} <= MARKDOWN_TAGS, document.tags
    assert all(not attrs or set(attrs) == {"style"} for _, attrs in document.tags)
    text = "".join(document.text)
    for name in WORKLOADS[section][1]:
        assert name in text, name


@pytest.mark.parametrize("section", sorted(WORKLOADS))
def test_html_page_holds_names_as_text_in_tables_and_plots(reports, section):
    document = Elements(render_html(reports[section]))
    tags = [tag for tag, _ in document.tags]
    assert tags.count("script") == 1  # the page's own table sorting
    assert "img" not in tags and "a" not in tags and "b" not in tags
    assert not [(tag, key) for tag, attrs in document.tags for key in attrs
                if key.lower().startswith("on")]
    svgs = [attrs for tag, attrs in document.tags if tag == "svg"]
    assert svgs and all(attrs.get("role") == "img" for attrs in svgs)  # the plots only
    text = "".join(document.text)
    assert f"cepplan plans: {NAME}" in text  # the page's title
    for name in WORKLOADS[section][1]:
        assert name in text, name


def test_plot_labels_with_dollars_are_drawn_as_written(reports):
    """The contexts' membership plot labels each grouped window with its contexts' names:
    `$\\undefinedmacro$` is text, not mathtext (it raised a ValueError)."""
    svg_text = [t for t in Elements(render_html(reports["contexts"])).text if "$" in t]
    assert any(CONTEXT in t for t in svg_text)


def test_compare_command_writes_the_report_of_such_a_workload(tmp_path):
    """The reported case through the command: a context named `cong$\\undefinedmacro$`."""
    workload = tmp_path / "workload.json"
    workload.write_text(json.dumps(WORKLOADS["contexts"][0]))
    done = cepplan("compare", workload, "--time-limit", "30", "-o", tmp_path / "report.html",
                   "-q")
    assert done.returncode == 0, done.stderr
    assert CONTEXT in "".join(Elements((tmp_path / "report.html").read_text()).text)
