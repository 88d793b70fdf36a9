"""Run OpenCEP (the peer) on a minute-bar file in its NASDAQ format; a script, started by
bench_engine in a fresh process so its wall time counts from process start.

    python benchmarks/opencep_stocks.py OPENCEP_SRC goog|msft EVENTS OUT.json

Writes {"matches": [[row index, ...], ...], "seconds": ...}: each match as the sorted row
positions (OpenCEP numbers events 0, 1, ... in file order, as cepplan does without an id column).
Nothing of OpenCEP is copied here; it is imported from OPENCEP_SRC at run time.
"""

from __future__ import annotations

import json
import sys
import time
from datetime import timedelta


def patterns(name: str):
    """The two benchmark patterns, in OpenCEP's API."""
    from base.Pattern import Pattern
    from base.PatternStructure import PrimitiveEventStructure, SeqOperator
    from condition.BaseRelationCondition import GreaterThanCondition, SmallerThanCondition
    from condition.CompositeCondition import AndCondition
    from condition.Condition import Variable

    def peak(var):
        return Variable(var, lambda x: x["Peak Price"])

    if name == "goog":
        return Pattern(SeqOperator(PrimitiveEventStructure("GOOG", "a"),
                                   PrimitiveEventStructure("GOOG", "b"),
                                   PrimitiveEventStructure("GOOG", "c")),
                       AndCondition(SmallerThanCondition(peak("a"), peak("b")),
                                    SmallerThanCondition(peak("b"), peak("c"))),
                       timedelta(minutes=3))
    return Pattern(SeqOperator(PrimitiveEventStructure("MSFT", "a"),
                               PrimitiveEventStructure("DRIV", "b"),
                               PrimitiveEventStructure("MSFT", "c")),
                   AndCondition(SmallerThanCondition(peak("a"), peak("c")),
                                GreaterThanCondition(Variable("b", lambda x: x["Volume"]), 1000)),
                   timedelta(minutes=10))


def main() -> None:
    source, name, events, out = sys.argv[1:5]
    sys.path.insert(0, source)
    from base.Event import Event
    from CEP import CEP
    from plugin.stocks.Stocks import MetastockDataFormatter
    from stream.FileStream import FileInputStream
    from stream.Stream import OutputStream

    class Collect(OutputStream):
        def __init__(self):
            super().__init__()
            self.found = []

        def add_item(self, item):
            self.found.append(sorted(e.payload[Event.INDEX_ATTRIBUTE_NAME]
                                     for e in item.events))

        def close(self):
            pass

    start = time.perf_counter()
    collected = Collect()
    CEP([patterns(name)]).run(FileInputStream(events), collected, MetastockDataFormatter())
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"matches": collected.found, "seconds": time.perf_counter() - start}, handle)


if __name__ == "__main__":
    main()
