"""docs/workload-format.md is the complete reference of workload.json: it names every key the
JSON Schema accepts, in the section of its part of the file, and every JSON example in it is a
valid workload."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from typer.testing import CliRunner

from cepplan.cli.app import app
from cepplan.workload.loader import workload_schema
from tests.conftest import ROOT

PAGE = (ROOT / "docs" / "workload-format.md").read_text()
EXAMPLES = re.findall(r"```json\n(.*?)```", PAGE, re.S)


def properties(schema: Any, root: dict[str, Any], path: tuple[str, ...] = (),
               seen: frozenset[str] = frozenset()) -> Iterator[tuple[str, ...]]:
    """Every property path the schema accepts, `$ref`s followed (each once per path)."""
    if isinstance(schema, list):
        for item in schema:
            yield from properties(item, root, path, seen)
        return
    if not isinstance(schema, dict):
        return
    ref = schema.get("$ref", "")
    if ref.startswith("#/$defs/") and ref not in seen:
        yield from properties(root["$defs"][ref.removeprefix("#/$defs/")], root, path,
                              seen | {ref})
    for name, sub in schema.get("properties", {}).items():
        yield (*path, name)
        yield from properties(sub, root, (*path, name), seen)
    for key in ("items", "additionalProperties"):
        yield from properties(schema.get(key), root, path, seen)


def section(top_key: str) -> str:
    """The text of the page's `## top_key` section."""
    match = re.search(rf"^## {re.escape(top_key)}\n(.*?)(?=^## |\Z)", PAGE, re.S | re.M)
    assert match, f"docs/workload-format.md has no section `## {top_key}`"
    return match.group(1)


SCHEMA_PATHS = sorted(set(properties(workload_schema(), workload_schema())))


def test_the_walk_finds_nested_keys():
    assert ("consumers", "queries", "qor", "disparity") in SCHEMA_PATHS
    assert ("patterns", "latency", "max_time") in SCHEMA_PATHS
    assert ("source", "key_columns") in SCHEMA_PATHS


@pytest.mark.parametrize("path", SCHEMA_PATHS, ids=".".join)
def test_every_key_of_the_schema_is_described_in_its_section(path):
    top = path[0]
    assert f"`{top}`" in section("Top level"), f"`{top}` missing from the top-level table"
    if len(path) > 1:
        assert f"`{path[-1]}`" in section(top), \
            f"{'.'.join(path)}: `{path[-1]}` is not named in the section `## {top}`"


def test_the_page_stands_alone():
    """It describes the format itself, not a contract kept elsewhere."""
    assert "shared/" not in PAGE and "contract" not in PAGE.lower()


def test_every_json_example_is_a_valid_workload(tmp_path):
    assert len(EXAMPLES) >= 4
    files = []
    for index, text in enumerate(EXAMPLES):
        files.append(tmp_path / f"example-{index}.json")
        files[-1].write_text(text)
    result = CliRunner().invoke(app, ["validate", *map(str, files)])
    assert result.exit_code == 0, result.output
    assert "warning" not in result.output
    assert result.output.count("ok: ") == len(EXAMPLES)
