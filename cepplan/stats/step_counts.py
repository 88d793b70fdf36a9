"""Per-step summaries of one event type, from its occupied time steps and their event counts:
the count histogram, order-m occupancy transition counts (seed 002 §4.2) and counts per block
of time (for the batch-means rate interval). Pure NumPy; the Spark job supplies the arrays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np

TRANSITION_CHUNK = 1 << 16  # steps summarised at a time (working arrays of about 5 MB)


class OrderedSteps(Protocol):
    """One event type's occupied steps, distinct and in order, with their event counts:
    `size` steps holding `events` events from step `first` to `last`, handed on in chunks
    (the summaries below never need them all at once)."""

    size: int
    events: int
    first: int
    last: int

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(steps, counts) in step order, a chunk at a time; may be iterated again."""
        ...


class StepArrays:
    """`OrderedSteps` held in memory as two arrays."""

    def __init__(self, steps: np.ndarray, counts: np.ndarray):
        self._steps, self._counts = steps, counts
        self.size, self.events = len(steps), int(np.sum(counts, dtype=np.int64))
        self.first = int(steps[0]) if len(steps) else 0
        self.last = int(steps[-1]) if len(steps) else -1

    def chunks(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        for low in range(0, self.size, TRANSITION_CHUNK):
            yield (self._steps[low:low + TRANSITION_CHUNK],
                   self._counts[low:low + TRANSITION_CHUNK])


def ordered_histogram(steps: OrderedSteps) -> dict[int, int]:
    """`count_histogram` of a type's counts, chunk by chunk."""
    total: Counter[int] = Counter()
    for _, counts in steps.chunks():
        total.update(count_histogram(counts))
    return dict(sorted(total.items()))


def ordered_transition_counts(steps: OrderedSteps, first: int, last: int,
                              order: int) -> np.ndarray:
    """`transition_counts` of a type's steps, chunk by chunk."""
    return carried_transition_counts((s for s, _ in steps.chunks()), first, last, order)


def ordered_block_counts(steps: OrderedSteps, time_step: float, start: float,
                         block_length: float, blocks: int) -> np.ndarray:
    """`block_counts` of a type's steps, chunk by chunk."""
    total = np.zeros(blocks)
    for chunk_steps, counts in steps.chunks():
        total += block_counts(chunk_steps, counts, time_step, start, block_length, blocks)
    return total


def count_histogram(counts: np.ndarray) -> dict[int, int]:
    """{c: number of steps holding exactly c events}, for c >= 1."""
    counts = np.asarray(counts, dtype=np.int64)
    if len(counts) and counts.min() >= 0 and counts.max() <= 4 * len(counts) + 1024:
        frequency = np.bincount(counts)  # small counts: no sort
        return {int(v): int(frequency[v]) for v in np.flatnonzero(frequency) if v >= 1}
    values, frequency = np.unique(counts, return_counts=True)
    return {int(v): int(f) for v, f in zip(values, frequency, strict=True) if v >= 1}


def transition_counts(steps: np.ndarray, first: int, last: int, order: int) -> np.ndarray:
    """counts[state, next] over the steps t in [first + order, last]: state = occupancy of
    steps t-order..t-1 (oldest first, as a binary number), next = occupancy of step t.

    Each occupied step s sets bit k of the window ending at s + k (bit 0 = the step itself);
    windows touching no occupied step are all-zero and counted by difference.
    """
    steps = np.asarray(steps)
    if len(steps) > TRANSITION_CHUNK and (steps[1:] > steps[:-1]).all():
        return _chunked_transition_counts(steps, first, last, order)
    return _whole_transition_counts(steps.astype(np.int64, copy=False), first, last, order)


def _whole_transition_counts(steps: np.ndarray, first: int, last: int,
                             order: int) -> np.ndarray:
    """`transition_counts` in one go (working arrays of the size of `steps` or the range)."""
    if last - first + 1 <= 4 * len(steps) + 1_000_000 and (steps[1:] > steps[:-1]).all():
        return _dense_transition_counts(steps, first, last, order)
    ends = np.concatenate([steps + k for k in range(order + 1)])
    bits = np.concatenate([np.full(len(steps), 1 << k, dtype=np.int64)
                           for k in range(order + 1)])
    keep = (ends >= first + order) & (ends <= last)
    ends, bits = ends[keep], bits[keep]
    distinct, inverse = np.unique(ends, return_inverse=True)
    masks = np.bincount(inverse, weights=bits, minlength=len(distinct)).astype(np.int64)
    per_mask = np.bincount(masks, minlength=2 ** (order + 1)).astype(float)
    per_mask[0] += max(last - first + 1 - order, 0) - len(distinct)
    return per_mask.reshape(2 ** order, 2)  # mask = state << 1 | next


def _chunked_transition_counts(steps: np.ndarray, first: int, last: int,
                               order: int) -> np.ndarray:
    """`transition_counts` of distinct steps in order, `TRANSITION_CHUNK` steps at a time."""
    return carried_transition_counts(
        (steps[low:low + TRANSITION_CHUNK] for low in range(0, len(steps), TRANSITION_CHUNK)),
        first, last, order)


def carried_transition_counts(chunks: Iterable[np.ndarray], first: int, last: int,
                              order: int) -> np.ndarray:
    """`transition_counts` of distinct steps handed on in order, chunk by chunk: each chunk
    counts the windows ending from just after the previous chunk's last step to its own last
    step (the `order` steps before it carried over), the windows after the last step are
    counted at the end; the working arrays are a chunk's, not the span's (sums of exact
    counts: the same figures as in one go)."""
    total = np.zeros((2 ** order, 2))
    end = first + order - 1  # the windows ending at or before `end` are counted
    carry = np.zeros(0, dtype=np.int64)  # the last `order` steps seen
    for steps in chunks:
        if not len(steps):
            continue
        chunk = np.concatenate([carry, np.asarray(steps, dtype=np.int64)])
        upto = min(int(chunk[-1]), last)
        if upto > end:
            total += _whole_transition_counts(chunk, end + 1 - order, upto, order)
            end = upto
        carry = chunk[max(0, len(chunk) - order):]
    if last > end:
        total += _whole_transition_counts(carry, end + 1 - order, last, order)
    return total


def _dense_transition_counts(steps: np.ndarray, first: int, last: int,
                             order: int) -> np.ndarray:
    """`transition_counts` for distinct steps over a short range: every window's mask read
    from an occupancy array of the range."""
    occupied = np.zeros(last - first + 1, dtype=np.uint16)  # masks fit 16 bits: order <= 8
    inside = steps[(steps >= first) & (steps <= last)]
    occupied[inside - first] = 1
    masks = np.zeros(max(len(occupied) - order, 0), dtype=np.uint16)
    for k in range(order + 1):  # bit k: the step k before the window's end
        masks |= occupied[order - k:len(occupied) - k] << np.uint16(k)
    per_mask = np.bincount(masks, minlength=2 ** (order + 1)).astype(float)
    return per_mask.reshape(2 ** order, 2)  # mask = state << 1 | next


def block_counts(steps: np.ndarray, counts: np.ndarray, time_step: float, start: float,
                 block_length: float, blocks: int) -> np.ndarray:
    """Events per block of `block_length` time units from `start` (steps placed by their
    start time; the last block takes the remainder)."""
    position = np.asarray(steps) * time_step  # each operation in place: one array of floats
    position -= start
    position /= block_length
    index = np.clip(np.floor(position, out=position), 0, blocks - 1, out=position)
    return np.bincount(index.astype(np.int64), weights=np.asarray(counts, dtype=float),
                       minlength=blocks)
