"""The package's import layering (DESIGN.md, "Layout"), read from every module's imports:
the stage code both engines run imports neither engine, the in-process engine does not import
the Spark one, and the optimizer imports no engine."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "cepplan"


def _imports(path: Path) -> set[str]:
    """Every module `path` imports when it runs (top level or inside functions), as dotted
    names; imports under `if TYPE_CHECKING:` are for type checkers only, never run."""
    found = set()
    for node in _run_nodes(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _run_nodes(tree: ast.AST):
    """Every node of `tree` except the bodies of `if TYPE_CHECKING:` blocks."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING",
                                                                    "typing.TYPE_CHECKING"):
            stack.extend(node.orelse)
        else:
            stack.extend(ast.iter_child_nodes(node))


def _modules(folder: str) -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def _offending(folder: str, forbidden: tuple[str, ...]) -> list[str]:
    return [f"{path.relative_to(PACKAGE)} imports {name}"
            for path in _modules(folder) for name in sorted(_imports(path))
            if name.startswith(forbidden)]


@pytest.mark.parametrize(("folder", "forbidden"), [
    ("engine_adapter/runtime", ("cepplan.engine_adapter.local", "cepplan.engine_adapter.spark",
                                "cepplan.cli", "cepplan.service", "pyspark")),
    ("engine_adapter/local", ("cepplan.engine_adapter.spark", "pyspark", "cepplan.cli")),
    ("planner", ("cepplan.engine_adapter", "pyspark", "cepplan.cli", "cepplan.service")),
    ("search", ("cepplan.engine_adapter", "cepplan.planner", "pyspark", "cepplan.cli")),
    ("costmodels", ("cepplan.engine_adapter", "cepplan.planner", "cepplan.search",
                    "cepplan.stats", "pyspark", "cepplan.cli")),
    ("workload", ("cepplan.engine_adapter", "cepplan.planner", "cepplan.search",
                  "cepplan.cli", "cepplan.service")),
])
def test_layer_imports_nothing_above_it(folder, forbidden):
    assert _modules(folder), folder
    assert _offending(folder, forbidden) == []


def test_the_checker_sees_an_import_inside_a_function(tmp_path):
    """The reader finds imports inside functions too, where the engines import lazily."""
    module = tmp_path / "lazy.py"
    module.write_text("def f():\n    from cepplan.engine_adapter.spark import job\n")
    assert "cepplan.engine_adapter.spark.job" in _imports(module)


def test_the_checker_leaves_out_imports_for_type_checkers_only(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                      "    from cepplan.planner import plan\nelse:\n    import json\n")
    assert _imports(module) == {"typing", "typing.TYPE_CHECKING", "json"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_no_two_modules_import_each_other():
    """No import cycle between modules (lazy imports inside functions included): each
    module can be read, tested and moved after the ones it uses."""
    import networkx as nx

    modules = {_module_name(path): path for path in PACKAGE.rglob("*.py")}
    graph = nx.DiGraph()
    for name, path in modules.items():
        graph.add_node(name)
        graph.add_edges_from((name, used) for used in _imports(path)
                             if used in modules and used != name)
    assert list(nx.simple_cycles(graph)) == []


def test_the_job_zip_holds_every_module_its_modules_import():
    """The generated job carries its code in a zip where cepplan is not installed: every
    cepplan module a shipped module imports (the runtime's and the in-process engine's the
    range tasks run, lazy imports included) must be in that zip too, or the job fails, or
    quietly falls back to a slower plan, where cepplan is not installed."""
    from cepplan.engine_adapter.spark.generate import SHIPPED

    shipped = {_module_name(PACKAGE / path) for path in SHIPPED}
    modules = {_module_name(path) for path in PACKAGE.rglob("*.py")}
    missing = {f"{path} imports {name}" for path in SHIPPED
               for name in _imports(PACKAGE / path)
               if name in modules and name.startswith("cepplan.") and name not in shipped
               and not (PACKAGE.parent / name.replace(".", "/") / "__init__.py").is_file()}
    assert missing == set()
