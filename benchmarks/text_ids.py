"""A join on a string id at about 1,000 events per window, for `python -m benchmarks windows`
(row `ids-1000`): logins and payments, one of each a second, each by one of 5,000 users
(`user-N`), and SEQ(a:Login, b:Pay) with a.user == b.user within 500 s, so a payment's
window holds about 1,000 events and a tenth of a match."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

USERS = 5_000
WINDOW_S = 500


def write_ids(path: Path, rows: int, seed: int = 0) -> None:
    """`rows` events alternating Login and Pay, one a half second, users uniform."""
    rng = np.random.default_rng(seed)
    users = rng.integers(0, USERS, rows)
    kinds = np.where(np.arange(rows) % 2 == 0, "Login", "Pay")
    lines = [f"{k},{i / 2},user-{u},{i % 97}\n"
             for i, (k, u) in enumerate(zip(kinds.tolist(), users.tolist(), strict=True))]
    path.write_text("type,ts,user,amount\n" + "".join(lines))


def plan_ids(scratch: Path, root: Path) -> Path:
    """The optimised plan of the `ids-1000` pattern."""
    wl = {"format": "cepplan.workload/1", "name": "string-ids", "time_unit": "s",
          "source": {"format": "csv", "header": True, "type_column": "type",
                     "time_column": "ts"},
          "event_types": {t: {"attributes": {"user": "string", "amount": "double"}}
                          for t in ("Login", "Pay")},
          "statistics": {"rates": {"Login": 1.0, "Pay": 1.0}},
          "patterns": [{"name": "p", "structure": ["SEQ", "a:Login", "b:Pay"],
                        "where": ["a.user == b.user"], "within": WINDOW_S}]}
    path = scratch / "ids-1000.json"
    path.write_text(json.dumps(wl))
    plan = scratch / "ids-1000.plan.json"
    subprocess.run([sys.executable, "-m", "cepplan", "optimize", str(path), "-o", str(plan),
                    "--quiet"], cwd=root, check=True)
    return plan
