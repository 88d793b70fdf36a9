"""The order in which `--dist loadgroup` hands the test groups to the workers
(tests/xdist_order.py): the SparkSession group, then the files starting Java of their own,
then the others, each part in the order xdist gave."""

from __future__ import annotations

import os
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st

from tests.conftest import ROOT
from tests.xdist_order import OWN_JVM, SESSION_GROUP, java_first

GROUPS = st.lists(st.one_of(st.just(SESSION_GROUP), st.just("server"),
                            st.from_regex(r"tests/[a-z]{1,3}\.py", fullmatch=True),
                            st.from_regex(OWN_JVM + r"tests/[a-z]{1,3}\.py", fullmatch=True)),
                  unique=True, max_size=12)


def test_the_session_group_then_the_own_jvm_files_then_the_rest():
    groups = ["tests/a.py", OWN_JVM + "tests/b.py", "server", SESSION_GROUP, "tests/c.py",
              OWN_JVM + "tests/d.py"]
    assert java_first(groups) == [SESSION_GROUP, OWN_JVM + "tests/b.py", OWN_JVM + "tests/d.py",
                                  "tests/a.py", "server", "tests/c.py"]


@given(GROUPS)
def test_every_group_is_handed_out_once_java_first_each_part_in_its_order(groups):
    session = [g for g in groups if g == SESSION_GROUP]
    own_jvm = [g for g in groups if g.startswith(OWN_JVM)]
    others = [g for g in groups if g != SESSION_GROUP and not g.startswith(OWN_JVM)]
    assert java_first(groups) == session + own_jvm + others


def test_each_file_runs_whole_on_one_worker(tmp_path):
    """Under `-n 2 --dist loadgroup` every test of a file runs on one worker: the groups
    tests/conftest.py gives reach xdist before it names each test's group."""
    (tmp_path / "conftest.py").write_text("from tests.conftest import *  # noqa: F403\n")
    for name in ("a", "b"):
        (tmp_path / f"test_{name}.py").write_text(
            "import os\nimport pytest\n\n\n@pytest.mark.parametrize('n', range(6))\n"
            "def test_worker(n):\n"
            f"    with open('ran-{name}.txt', 'a') as f:\n"
            "        f.write(os.environ['PYTEST_XDIST_WORKER'] + '\\n')\n")
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup",
                           "-p", "no:cacheprovider", "-q"], cwd=tmp_path, capture_output=True,
                          text=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for name in ("a", "b"):
        workers = (tmp_path / f"ran-{name}.txt").read_text().split()
        assert len(workers) == 6 and len(set(workers)) == 1, workers
