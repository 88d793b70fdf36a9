"""The chi-square survival function and the t quantile the statistics report, in plain
Python, equal scipy's (the reference), so a live stream's online statistics need not import
scipy; and the adaptive stream's statistics indeed run without it."""

from __future__ import annotations

import math
import subprocess
import sys

from hypothesis import given
from hypothesis import strategies as st
from scipy import special

from cepplan.stats.collect import RATE_BLOCKS, T_QUANTILE
from cepplan.stats.distributions import chi_square_survival
from tests.engine.example_data import EXAMPLES
from tests.in_process import cepplan


def test_the_rate_intervals_t_quantile_is_scipys():
    assert math.isclose(T_QUANTILE, special.stdtrit(RATE_BLOCKS - 1, 0.975), rel_tol=1e-14)


@given(st.integers(1, 10_000_000), st.floats(0.0, 3.0), st.floats(-6.0, 6.0))
def test_the_chi_square_survival_function_is_scipys(df, scale, spread):
    """Around the mean (`spread` standard deviations) and far from it (`scale` times df);
    within scipy's own accuracy at millions of degrees of freedom (3e-8: a series summed
    exactly agrees with this code there)."""
    for x in (df * scale, max(0.0, df + spread * math.sqrt(2 * df))):
        want = float(special.chdtrc(df, x))
        got = chi_square_survival(df, x)
        assert math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-13), (df, x, got, want)


def test_the_edges_of_the_chi_square_survival_function():
    assert chi_square_survival(3, 0.0) == 1.0
    assert chi_square_survival(3, math.inf) == 0.0
    assert math.isnan(chi_square_survival(3, math.nan))


def test_an_adaptive_streams_statistics_run_without_scipy(tmp_path):
    """The online path (measure and check at every quarter horizon) imports no scipy: its
    import costs more CPU than a short stream's statistics."""
    program = (
        "import runpy, sys\n"
        "sys.argv = ['cepplan', *sys.argv[1:]]\n"
        "try:\n"
        "    runpy.run_module('cepplan', run_name='__main__')\n"
        "except SystemExit as end:\n"
        "    assert not end.code, end.code\n"
        "import json, pathlib\n"
        "stream = json.loads((pathlib.Path(sys.argv[-5]) / 'metrics.json').read_text())\n"
        "assert stream['stream']['statistics_seconds'] > 0  # the statistics were measured\n"
        "print('scipy' in sys.modules)\n")
    fraud = EXAMPLES / "fraud"
    plan = tmp_path / "plan.json"
    assert cepplan("optimize", fraud / "workload.json", "-o", plan, "-q").returncode == 0
    with (fraud / "events.csv").open("rb") as events:
        done = subprocess.run([sys.executable, "-c", program, "run", str(plan), "--follow",
                               "-", "-o", str(tmp_path / "out"), "--adaptive", "-q",
                               "--replan-horizon", "10"],
                              stdin=events, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
