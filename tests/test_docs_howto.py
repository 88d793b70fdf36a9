"""Every how-to under docs/how-to/ holds on the bundled examples: each ```bash block runs, as one
script (`set -euo pipefail`), in order, in a fresh copy of the examples, so the guides cannot go
stale (the plain `cepplan` lines a block begins with run in this process, one by one, each
to exit 0, and the rest of the block in bash).
```sh blocks are shown, not run (they need a Spark cluster; each page says so).
docs/index.md links every page of docs/ so none is lost from the map."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.test_readme import ROOT, in_process_argv, prepared, run_in_process

DOCS = ROOT / "docs"
HOW_TO = sorted((DOCS / "how-to").glob("*.md"))
_BASH = re.compile(r"^```bash\n(.*?)^```$", re.M | re.S)
_LINE_END = re.compile(r"(?<!\\)\n")  # a newline not escaped by a trailing `\`


def bash_blocks(text: str) -> list[str]:
    """The page's ```bash blocks, each one script."""
    return [match.group(1) for match in _BASH.finditer(text)]


def test_bash_blocks_are_found_and_sh_blocks_left_out():
    text = ("```bash\ncepplan validate w.json\ncepplan show \\\n  w.json\n```\n"
            "```sh\nspark-submit job.py\n```\n```bash\nls\n```\n")
    assert bash_blocks(text) == ["cepplan validate w.json\ncepplan show \\\n  w.json\n", "ls\n"]


@pytest.mark.parametrize("page", HOW_TO, ids=[page.stem for page in HOW_TO])
def test_every_bash_block_of_the_how_to_runs(page, tmp_path):
    env = prepared(tmp_path)
    scripts = bash_blocks(page.read_text())
    assert scripts, f"{page.name} has no ```bash block to run"
    for script in scripts:
        lines = [line for line in _LINE_END.split(script) if line.strip()]
        while lines and (argv := in_process_argv(" ".join(lines[0].replace("\\\n", " ").split()),
                                                 tmp_path)) is not None:
            done = run_in_process(argv, tmp_path, env)  # a plain cepplan line: in this process
            assert done.returncode == 0, (f"{page.name}: `cepplan {' '.join(argv)}` failed "
                                          f"(exit {done.returncode}):\n{done.stderr[-3000:]}")
            lines.pop(0)
        if not lines:
            continue
        done = subprocess.run(["bash", "-c", "set -euo pipefail\n" + "\n".join(lines)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, (f"{page.name}: block failed (exit {done.returncode}):\n"
                                      f"{script}\n{done.stderr[-3000:]}")


def test_the_index_links_every_page():
    index = (DOCS / "index.md").read_text()
    pages = [p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if p.name != "index.md"]
    missing = [page for page in pages if f"({page})" not in index]
    assert not missing, f"docs/index.md does not link {missing}"
