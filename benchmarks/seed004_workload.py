"""A multi-pattern workload shaped like the NASDAQ experiments of the multi-pattern paper: 100
SEQ/AND patterns of 3 to 5 stock types, 15-minute windows, per-type rates in 2-47 events/s,
every predicate's selectivity in 0.003-0.92, with few enough matches per window to run.

Each pattern's events share one key (250 keys: the pair selectivity of `a.key == b.key` is
0.004): `partition_by: ["key"]`, which the engine evaluates per key, or with `keyed=False` the
chain of equalities in `where` (the engine then narrows each join step by one attribute only,
and the run takes far longer). Bands between adjacent events (`abs(a.diff - b.diff) < d`) narrow
further, d chosen so the pattern expects about `target` partial matches alive per window in the
paper's cost model, W^k * prod(rates) * prod(selectivities); one loose comparison
(`a.size < b.size`, 0.5, or a wide band, 0.9) is added. Attributes are uniform on 0:100, so a
band's selectivity is exact: 1 - (1 - d/100)^2.

    doc = seed004_workload(seed=4)
    expected_matches(doc, duration)  # per pattern, over a stream of `duration` seconds
"""

from __future__ import annotations

import math
import random
from itertools import pairwise
from typing import Any

KEYS = 250
WINDOW_S = 900
STATED_RATES = (2.0, 47.0)  # events/s per type
STATED_SELECTIVITIES = (0.003, 0.92)
# Drawn inside the stated ranges with room for the noise of measuring a short sample.
RATES = (2.5, 45.0)
SELECTIVITY = (1 / KEYS, 0.9)
BAND_ATTRIBUTES = ("diff", "price")  # independent uniform attributes, one band each per pair


def seed004_workload(n_patterns: int = 100, n_types: int = 20, *, seed: int = 4,
                     target: float = 5.0, keyed: bool = True) -> dict[str, Any]:
    """A workload document with `n_patterns` patterns over `n_types` stock types, their
    rates and the selectivities of their predicates in `statistics`; same seed, same doc."""
    rng = random.Random(seed)
    types = [f"S{i:02d}" for i in range(n_types)]
    rates = {t: round(rng.uniform(*RATES), 2) for t in types}
    patterns, selectivities = [], {}
    for index in range(n_patterns):
        size = rng.randint(3, 5)
        chosen = rng.sample(types, size)
        variables = [f"v{i}" for i in range(size)]
        keys = {f"{a}.key == {b}.key": 1 / KEYS for a, b in pairwise(variables)}
        loose = _loose_comparison(rng, variables)
        bands = _bands(variables, [rates[t] for t in chosen],
                       [*keys.values(), *loose.values()], target)
        sels = {**({} if keyed else keys), **loose, **bands}
        name = f"p{index:03d}"
        selectivities[name] = {text: round(value, 6) for text, value in sels.items()}
        operands = [f"{v}:{t}" for v, t in zip(variables, chosen, strict=True)]
        patterns.append({"name": name, "structure": [rng.choice(["SEQ", "AND"]), *operands],
                         "where": list(sels), "within": f"{WINDOW_S}s",
                         **({"partition_by": ["key"]} if keyed else {})})
    return {
        "format": "cepplan.workload/1", "name": "seed004_like", "time_unit": "s",
        "source": {"format": "csv", "header": True, "type_column": "type", "time_column": "ts",
                   "key_columns": ["key"]},
        "schemas": {"Tick": {"key": "long", "diff": "double", "price": "double",
                             "size": "double"}},
        "event_types": {t: {"schema": "Tick"} for t in types},
        "patterns": patterns,
        "statistics": {"rates": rates, "selectivities": selectivities},
    }


def _loose_comparison(rng: random.Random, variables: list[str]) -> dict[str, float]:
    """One loose predicate on `size` between the pattern's first and last events: an
    order (0.5) or a wide band (0.9)."""
    first, last = variables[0], variables[-1]
    if rng.random() < 0.5:
        return {f"{first}.size < {last}.size": 0.5}
    return {f"abs({first}.size - {last}.size) < {_band_width(SELECTIVITY[1])}":
            SELECTIVITY[1]}


def _bands(variables: list[str], rates: list[float], fixed: Any,
           target: float) -> dict[str, float]:
    """Bands between adjacent events, as few as bring the pattern's expected partial matches
    per window down to `target`, all of one selectivity within the stated range."""
    alive = WINDOW_S ** len(rates) * math.prod(rates) * math.prod(fixed)
    needed = min(1.0, target / alive)
    slots = [(attribute, a, b) for attribute in BAND_ATTRIBUTES
             for a, b in pairwise(variables)]
    count = min(len(slots), max(len(variables) - 1,
                                math.ceil(math.log(needed) / math.log(SELECTIVITY[0]))))
    each = min(SELECTIVITY[1], max(SELECTIVITY[0], needed ** (1 / count)))
    width = _band_width(each)
    return {f"abs({a}.{attribute} - {b}.{attribute}) < {width}": _band_selectivity(width)
            for attribute, a, b in slots[:count]}


def _band_width(selectivity: float) -> float:
    """The d of `abs(x - y) < d` for x, y uniform on 0:100 passing with `selectivity`
    (rounded to 4 decimals, never below the range's low end)."""
    return math.ceil(100 * (1 - math.sqrt(1 - selectivity)) * 1e4) / 1e4


def _band_selectivity(width: float) -> float:
    """P(|x - y| < width) for x, y independent uniform on 0:100."""
    return 1 - (1 - width / 100) ** 2


def expected_matches(doc: dict[str, Any], duration: float) -> dict[str, float]:
    """Expected matches of each pattern over a stream of `duration` seconds L: k-tuples of its
    types spanning at most the window, (L*k*W^(k-1) - (k-1)*W^k) * prod(rates) (the volume of
    such tuples in [0, L]^k; L^k when L < W; one order in k! for SEQ), times the product of
    its selectivities (independent attributes; one key shared)."""
    rates = doc["statistics"]["rates"]
    out = {}
    for pattern in doc["patterns"]:
        operator, *operands = pattern["structure"]
        k = len(operands)
        volume = (duration * k * WINDOW_S ** (k - 1) - (k - 1) * WINDOW_S ** k
                  if duration >= WINDOW_S else duration ** k)
        tuples = volume * math.prod(rates[o.split(":")[1]] for o in operands)
        if operator == "SEQ":
            tuples /= math.factorial(k)
        out[pattern["name"]] = tuples * _selectivity(doc, pattern)
    return out


def alive_per_window(doc: dict[str, Any]) -> dict[str, float]:
    """The paper's partial matches alive at once for each whole pattern (W^k * prod(rates) *
    prod(selectivities)): the figure the band widths were chosen to bring to `target`."""
    rates = doc["statistics"]["rates"]
    return {p["name"]: WINDOW_S ** (len(p["structure"]) - 1)
            * math.prod(rates[o.split(":")[1]] for o in p["structure"][1:])
            * _selectivity(doc, p) for p in doc["patterns"]}


def _selectivity(doc: dict[str, Any], pattern: dict[str, Any]) -> float:
    """The product of a pattern's predicates' selectivities, with 1/KEYS per further event
    when its events share a key by `partition_by`."""
    shared_key = (1 / KEYS) ** (len(pattern["structure"]) - 2) if "partition_by" in pattern \
        else 1.0
    return shared_key * math.prod(doc["statistics"]["selectivities"][pattern["name"]].values())
