"""Which time blocks hold the selectivity sample: blocks aligned on absolute time (index
`floor(ts / length)`), each kept when a seeded hash of its index falls under a threshold.

The rule needs nothing from a pass over the data, so an engine can gather the sample while it
counts (seed 004 §2 measures selectivities on such a sample). Thresholds are nested: the blocks
kept at a lower fraction are a subset of those kept at a higher one, so a sample gathered at a
generous fraction is cut down exactly once the counts are known. The hash is Spark's `hash`
(Murmur3 x86-32 over two longs, seed 42), written here in NumPy so both engines keep the same
blocks (tested against Spark).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from cepplan.stats.scan import SampleBlocks

HASH_RANGE = 1 << 31  # hashes are masked to 31 bits: 0 .. 2^31 - 1
SPARK_HASH_SEED = 42
INDEX_LIMIT = 9e18  # block indexes are clipped to fit a long (times are at most 1e17 units)
_M32 = 0xFFFFFFFF


def threshold(fraction: float) -> int | None:
    """The hash threshold keeping `fraction` of the blocks in expectation (None: all)."""
    if fraction >= 1:
        return None
    return max(0, math.ceil(fraction * HASH_RANGE))


def fraction_of(threshold_value: int | None) -> float:
    """The fraction of the blocks a threshold keeps in expectation."""
    return 1.0 if threshold_value is None else threshold_value / HASH_RANGE


def block_index(ts: np.ndarray, length: float) -> np.ndarray:
    """Block of each time, `floor(ts / length)` (as Spark computes it: double division),
    clipped to +-`INDEX_LIMIT` so that it fits a long."""
    ratio = np.clip(np.asarray(ts, dtype=np.float64) / length, -INDEX_LIMIT, INDEX_LIMIT)
    return np.floor(ratio).astype(np.int64)


def block_hash(blocks: np.ndarray, seed: int) -> np.ndarray:
    """Spark's `hash(block, seed)` for long `block` and `seed`, masked to 31 bits."""
    h = _hash_long(np.asarray(blocks, dtype=np.int64).view(np.uint64),
                   np.full(len(blocks), SPARK_HASH_SEED, dtype=np.uint64))
    h = _hash_long(np.full(len(blocks), seed, dtype=np.int64).view(np.uint64), h)
    return (h & 0x7FFFFFFF).astype(np.int64)


def in_blocks(types: ArrayLike, ts: np.ndarray, plans: Sequence[SampleBlocks]) -> np.ndarray:
    """Which rows (type names `types`, times `ts`) lie in the kept blocks of any plan."""
    wanted = np.zeros(len(ts), dtype=bool)
    codes, names = pd.factorize(types)  # each name compared once
    for plan in plans:
        condition = np.isin(np.asarray(names, dtype=object), plan.types)[codes] & (codes >= 0)
        if plan.threshold is not None and condition.any():
            where = np.flatnonzero(condition)
            # each distinct block hashed once (a block holds many rows)
            block, distinct = _numbered(block_index(np.asarray(ts)[where], plan.length))
            kept = (block_hash(np.asarray(distinct), plan.seed) < plan.threshold)[block]
            condition[where[~kept]] = False
        wanted |= condition
    return wanted


def _numbered(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """`pd.factorize(blocks)`; for blocks in time order (as the canonical sample has them)
    from where the block changes, without hashing."""
    if len(blocks) < 2 or (blocks[1:] < blocks[:-1]).any():
        codes, distinct = pd.factorize(blocks)
        return codes, np.asarray(distinct)
    changes = np.flatnonzero(blocks[1:] != blocks[:-1]) + 1
    codes = np.zeros(len(blocks), dtype=np.int64)
    codes[changes] = 1
    return np.cumsum(codes), blocks[np.concatenate([[0], changes])]


def covers(gathered: Sequence[SampleBlocks], wanted: Sequence[SampleBlocks]) -> bool:
    """Whether the rows gathered for `gathered` include every row `wanted` needs: per
    pattern the same types, and all their rows gathered, or the same blocks at a threshold
    no lower."""
    if len(gathered) != len(wanted):
        return False
    for had, need in zip(gathered, wanted, strict=True):
        if had.types != need.types:
            return False
        if had.threshold is None:
            continue
        if (had.length, had.seed) != (need.length, need.seed) or (
                need.threshold is None or need.threshold > had.threshold):
            return False
    return True


def _hash_long(value: np.ndarray, seed: np.ndarray) -> np.ndarray:
    """Murmur3_x86_32.hashLong: the low then the high 32 bits of `value`, then fmix (uint64
    arrays holding 32-bit values, so products never overflow)."""
    h = _mix_h1(seed & _M32, _mix_k1(value & _M32))
    h = _mix_h1(h, _mix_k1(value >> np.uint64(32)))
    h ^= np.uint64(8)
    h ^= h >> np.uint64(16)
    h = (h * np.uint64(0x85EBCA6B)) & _M32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0xC2B2AE35)) & _M32
    return h ^ (h >> np.uint64(16))


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return ((x << np.uint64(r)) | (x >> np.uint64(32 - r))) & _M32


def _mix_k1(k: np.ndarray) -> np.ndarray:
    k = (k * np.uint64(0xCC9E2D51)) & _M32
    return (_rotl(k, 15) * np.uint64(0x1B873593)) & _M32


def _mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    h = _rotl(h ^ k, 13)
    return (h * np.uint64(5) + np.uint64(0xE6546B64)) & _M32
