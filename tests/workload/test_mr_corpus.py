"""`cepplan import` on 29 MATCH_RECOGNIZE queries of the peers' own documentation and tests
(tests/workload/mr_corpus/, each with its source and a sample of events): each one either runs
with the matches of the SQL standard's definitions (a brute-force reference) and of the peer's
documented result, or is refused with one error naming the clause it cannot carry over."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from cepplan.cli.import_cmd import sample_columns
from cepplan.engine_adapter.job_spec import job_data
from cepplan.engine_adapter.runtime.job import job_from_json
from cepplan.engine_adapter.runtime.local import run_local
from cepplan.errors import InputError
from cepplan.planner.plan import trivial_plan
from cepplan.sources.local_source import read_batches
from cepplan.workload import build_workload
from cepplan.workload.sql_import import import_query
from tests.workload.reference_match_recognize import reference_matches
from tests.workload.test_sql_import import bound, rows_of

CORPUS = Path(__file__).parent / "mr_corpus"
QUERIES = sorted(p.stem for p in CORPUS.glob("*.sql"))


def header(sql: str) -> dict[str, str]:
    """The `-- key: value` lines that open a corpus file."""
    return dict(re.findall(r"^-- (\w[\w ]*): (.*)$", sql, re.MULTILINE))


def test_the_corpus_holds_29_queries_each_with_its_source_and_sample():
    assert len(QUERIES) == 29
    for name in QUERIES:
        fields = header((CORPUS / f"{name}.sql").read_text())
        assert fields["source"] and fields["expect"], name
        assert (CORPUS / f"{name}.csv").is_file(), name


@pytest.mark.parametrize("name", QUERIES)
def test_corpus_query_runs_equal_to_the_reference_or_is_refused_at_its_clause(name):
    sql = (CORPUS / f"{name}.sql").read_text()
    sample = CORPUS / f"{name}.csv"
    fields = header(sql)
    within = float(fields["within"]) if "within" in fields else None
    fmt, columns = sample_columns(sample)
    refused = re.fullmatch(r"refused at (.+)", fields["expect"])
    if refused:
        with pytest.raises(InputError) as caught:
            import_query(sql, columns, file=f"{name}.sql", sample_format=fmt, within=within)
        (problem,) = caught.value.problems
        assert problem.path.split(":")[0] == refused.group(1), problem
        return
    assert fields["expect"] == "runs"
    doc = import_query(sql, columns, file=f"{name}.sql", sample_format=fmt, within=within)
    workload = build_workload(doc)  # a core pattern per choice of optional variables
    variables = bound(workload)
    attributes = {t: dict(e.attributes) for t, e in workload.event_types.items()}
    events = pd.concat(list(read_batches(str(sample), doc["source"], attributes,
                                         doc["time_unit"])))
    assert (events["__reject"] == "").all() or events["__reject"].isna().all()
    result = run_local(events.drop(columns="__reject"),
                       job_from_json(job_data(workload, trivial_plan(workload))))
    # rows are named by their time, distinct in each sample (not every sample has an id)
    got = sorted(tuple(sorted((e["ts"], v) for v in variables if v in m["events"]
                              for e in rows_of(m["events"][v])))
                 for pattern in workload.patterns for m in result.matches[pattern.name])
    rows = [{**row, "__row": i} for i, row in enumerate(pd.read_csv(sample).to_dict("records"))]
    time = [row[doc["source"]["time_column"]] for row in rows]
    assert len(set(time)) == len(time)
    expected = sorted(tuple(sorted((time[i], v) for v, i in match))
                      for match in reference_matches(sql, rows, within, row_id="__row",
                                                       bound=variables))
    assert expected, "the sample makes the query match"
    assert got == expected
    if "peer matches" in fields:  # the peer's own result, as 1-based rows of the sample
        peer = sorted(tuple(time[int(r) - 1] for r in m.split())
                      for m in fields["peer matches"].split(";"))
        assert [tuple(t for t, _ in match) for match in expected] == peer

