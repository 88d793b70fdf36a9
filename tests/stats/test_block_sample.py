"""The selectivity sample's block rule (block_sample.py): the NumPy hash is Spark's, each block
is kept with the planned probability independently of its index (Monte Carlo over seeds), the
fractions are nested, and selectivities estimated on such samples are unbiased and within the
existing tolerance on synthetic data with known selectivities; the row estimate that fixes
the fraction before the scan is exact for Parquet and close for CSV."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from cepplan.stats import block_sample
from cepplan.stats.block_sample import block_hash, block_index, covers, in_blocks, threshold
from cepplan.stats.collect import canonical_sample, sample_plans
from cepplan.stats.row_estimate import estimate_type_counts
from cepplan.stats.scan import SampleBlocks
from cepplan.stats.selectivity import estimate_pattern
from cepplan.stats.synth import synthesize
from cepplan.stats.synth_write import write_events
from cepplan.workload import build_workload
from cepplan.workload.columns import EVENT_TS, EVENT_TYPE

WORKLOAD = {
    "format": "cepplan.workload/1", "time_unit": "s",
    "source": {"format": "parquet", "type_column": "kind", "time_column": "t"},
    "schemas": {"E": {"x": "double"}},
    "event_types": {"P": {"schema": "E"}, "Q": {"schema": "E"}, "R": {"schema": "E"}},
    "patterns": [{"name": "pq", "structure": ["SEQ", "a:P", "b:Q"],
                  "where": ["a.x < b.x", "a.x > 75"], "within": 2}],
}


def test_hash_and_blocks_equal_sparks(spark):
    from pyspark.sql import functions as F

    from cepplan.stats.spark_scan import _in_blocks

    rng = np.random.default_rng(0)
    values = np.concatenate([rng.integers(-2**62, 2**62, 300), [0, 1, -1, 2**63 - 1, -2**63]])
    frame = spark.createDataFrame([(int(v),) for v in values], "b long")
    for seed in (0, 7, -3, 2**40):
        got = [r[0] for r in frame.select(F.hash("b", F.lit(seed).cast("long"))
                                          .bitwiseAND(0x7FFFFFFF)).collect()]
        assert got == block_hash(values, seed).tolist()
    types = rng.choice(["P", "Q", "R"], 2000)
    ts = np.round(rng.uniform(-500, 5000, 2000), 3)
    plans = [SampleBlocks(("P", "Q"), 40.0, threshold(0.3), 5),
             SampleBlocks(("R",), 0.7, threshold(0.05), 5), SampleBlocks(("Q",), 3.0, None, 5)]
    rows = spark.createDataFrame(pd.DataFrame({EVENT_TYPE: types, EVENT_TS: ts}))
    kept = rows.select(_in_blocks(plans).alias("k")).toPandas()["k"].to_numpy()
    assert kept.tolist() == in_blocks(types, ts, plans).tolist()
    assert 0.1 < kept.mean() < 0.9


def test_each_block_kept_with_the_fraction_independently():
    blocks, seeds, fraction = np.arange(-200, 300), 2000, 0.1
    limit = threshold(fraction)
    kept = np.array([block_hash(blocks, seed) < limit for seed in range(seeds)])
    per_block = kept.mean(axis=0)  # inclusion probability of each block, over seeds
    sigma = np.sqrt(fraction * (1 - fraction) / seeds)
    assert np.abs(per_block - fraction).max() < 4.5 * sigma
    assert abs(per_block.mean() - fraction) < 4 * sigma / np.sqrt(len(blocks))
    # neighbours are kept independently: P(both) = fraction^2
    both = (kept[:, 1:] & kept[:, :-1]).mean()
    assert both == pytest.approx(fraction ** 2, abs=4 * np.sqrt(fraction ** 2 / kept.size))
    # nested: a lower fraction keeps a subset
    lower = np.array([block_hash(blocks, seed) < threshold(0.03) for seed in range(50)])
    assert not (lower & ~kept[:50]).any() and lower.any()
    assert threshold(1.0) is None and threshold(0.5) == block_sample.HASH_RANGE // 2


def test_rows_in_time_order_kept_as_in_any_order():
    """The blocks of rows in time order are numbered from where they change; the rows kept
    must be those kept when the same rows come shuffled (numbered by hashing)."""
    rng = np.random.default_rng(9)
    ts = np.sort(rng.uniform(-50, 500, 20_000))
    types = rng.choice(["A", "B", "C"], len(ts)).astype(object)
    plans = [SampleBlocks(("A", "B"), 2.5, threshold(0.3), 4), SampleBlocks(("C",), 7.0,
                                                                           threshold(0.5), 1)]
    shuffle = rng.permutation(len(ts))
    in_order = in_blocks(types, ts, plans)
    assert in_order.any() and not in_order.all()
    assert np.array_equal(in_order[shuffle], in_blocks(types[shuffle], ts[shuffle], plans))


def test_covers_requires_the_same_blocks_at_a_higher_fraction():
    wide, narrow = (SampleBlocks(("P",), 4.0, threshold(f), 1) for f in (0.2, 0.1))
    assert covers([wide], [narrow]) and not covers([narrow], [wide])
    assert covers([SampleBlocks(("P",), 4.0, None, 1)], [wide])
    # every row of the types gathered: any blocks are covered
    assert covers([SampleBlocks(("P",), 4.0, None, 1)], [SampleBlocks(("P",), 2.0, None, 3)])
    assert not covers([SampleBlocks(("P",), 4.0, None, 1)], [SampleBlocks(("Q",), 4.0, None, 1)])
    assert not covers([wide], [SampleBlocks(("P",), 4.0, None, 1)])
    assert not covers([wide], [SampleBlocks(("P",), 2.0, threshold(0.1), 1)])
    assert not covers([wide], [SampleBlocks(("P",), 4.0, threshold(0.1), 2)])


def test_block_index_is_floor_and_fits_a_long():
    assert block_index(np.array([-0.5, 0.0, 3.99, 4.0, 1e17]), 4.0).tolist() == [
        -1, 0, 0, 1, 25_000_000_000_000_000]
    assert block_index(np.array([1e17, -1e17]), 1e-3).tolist() == [int(9e18), int(-9e18)]


def test_selectivities_unbiased_over_seeds():
    """Monte Carlo over the sampler's seed on one synthetic stream with known selectivities
    (a.x < b.x: 1/2, a.x > 75: 1/4): each estimate within the tests' 0.03, their mean within
    0.01, and the expected sample size is the planned one."""
    workload = build_workload(WORKLOAD)
    result = synthesize(workload, duration=60_000, seed=3, rates={"P": 1.0, "Q": 1.0, "R": 1.0},
                        truth_draws=1000)
    events = result.events
    counts = events[EVENT_TYPE].value_counts().to_dict()
    span = float(np.ceil(events[EVENT_TS].max()))
    estimates, sizes = {"a.x < b.x": [], "a.x > 75": []}, []
    for seed in range(40):
        ((pattern, blocks),) = sample_plans(workload, counts, sample=10_000, seed=seed,
                                            time_step=1.0, span=span)
        part = events[in_blocks(events[EVENT_TYPE].to_numpy(), events[EVENT_TS].to_numpy(),
                                [blocks])]
        sizes.append(len(part))
        got = estimate_pattern(pattern, canonical_sample(part, workload), seq_ties="strict",
                               budget=10_000, seed=seed)
        for text in estimates:
            estimates[text].append(got[text]["value"])
    for text, truth in (("a.x < b.x", 0.5), ("a.x > 75", 0.25)):
        values = np.array(estimates[text])
        assert np.abs(values - truth).max() < 0.03, text
        assert values.mean() == pytest.approx(truth, abs=0.01), text
    assert np.mean(sizes) == pytest.approx(10_000, rel=0.1)


def test_row_estimate_parquet_exact_csv_close(tmp_path):
    workload = build_workload(WORKLOAD)
    result = synthesize(workload, duration=30_000, seed=1, rates={"P": 2.0, "Q": 1.0, "R": 0.5},
                        truth_draws=100)
    truth = result.events[EVENT_TYPE].value_counts().to_dict()
    path = tmp_path / "e.parquet"
    write_events(result.events, workload, path)
    estimated = estimate_type_counts([str(path)], workload)
    assert sum(estimated.values()) == pytest.approx(len(result.events))
    for name, count in truth.items():
        assert estimated[name] == pytest.approx(count, rel=0.05)
    csv_workload = build_workload({**WORKLOAD, "source": {**WORKLOAD["source"],
                                                          "format": "csv"}})
    csv = tmp_path / "e.csv"
    write_events(result.events, csv_workload, csv)
    assert csv.stat().st_size > 2 << 20  # more than the head read
    estimated = estimate_type_counts([str(csv)], csv_workload)
    for name, count in truth.items():
        assert estimated[name] == pytest.approx(count, rel=0.1)
    assert estimate_type_counts(["s3://bucket/e.csv"], csv_workload) is None
    assert estimate_type_counts([str(tmp_path / "absent.csv")], csv_workload) is None
