"""Covering selections (seed 000 §4.1.2): pick the fewest (cheapest) selections whose results
every selection of a batch can reuse within its quality thresholds — weighted set cover.

Solvers, each a plain function over a `CoverInstance`: exact CP-SAT with a time limit, MQC
(Johnson's greedy over the family of feasible subsets, Fig. 4), MNH (operators by number of
processing neighbours, each selection joining the first covering selection that serves it,
Fig. 5), and `solve_auto`, which takes CP-SAT when the instance fits its time budget.
"""

from __future__ import annotations

import heapq
import time
from dataclasses import dataclass, field

CPSAT, MQC, MNH, AUTO = "cpsat", "mqc", "mnh", "auto"
SOLVERS = (AUTO, CPSAT, MQC, MNH)

# Cover-relation entries (pairs "j may serve i") per second of time limit up to which CP-SAT
# returns within its limit: `python -m benchmarks covering` (solve time against batch size)
# measured 89,857 pairs (10,000 selections) returning in 9.4 s of a 10 s limit.
CPSAT_ENTRIES_PER_SECOND = 10_000
WEIGHT_SCALE = 1000  # CP-SAT needs integer costs: weights are kept to three decimals


@dataclass(frozen=True)
class CoverInstance:
    """One batch of one operator group: selection j may serve every selection in `serves[j]`
    (itself included); `owner[j]` is the query the selection belongs to, `weight[j]` the cost of
    executing the operator on it, `priority[q]` query q's number of processing neighbours."""

    serves: tuple[frozenset[int], ...]
    weight: tuple[float, ...]
    owner: tuple[int, ...]
    priority: tuple[int, ...]

    @property
    def size(self) -> int:
        return len(self.serves)

    @property
    def entries(self) -> int:
        return sum(len(s) for s in self.serves)


@dataclass(frozen=True)
class CoverSolution:
    """Chosen covering selections and, per selection, the chosen selection serving it.

    `status`: optimal, feasible (time limit hit with a solution; `gap` relative to the bound),
    heuristic, or fallback (CP-SAT found nothing in time: the MQC cover). `solver` names what
    produced the cover; `reason` says why `auto` chose it."""

    chosen: tuple[int, ...]
    assignment: tuple[int, ...]
    cost: float
    solver: str
    status: str
    seconds: float
    gap: float | None = None
    reason: str = field(default="", compare=False)


def instance(serves: list[set[int]] | tuple[frozenset[int], ...], owner: list[int] | None = None,
             weight: list[float] | None = None,
             priority: list[int] | None = None) -> CoverInstance:
    """A `CoverInstance`, each selection serving itself; defaults: one query per selection,
    unit weights, priority = how many other selections a selection serves."""
    full = tuple(frozenset(s) | {j} for j, s in enumerate(serves))
    owner = list(range(len(full))) if owner is None else owner
    weight = [1.0] * len(full) if weight is None else weight
    if priority is None:
        priority = [0] * (max(owner) + 1 if owner else 0)
        for j, s in enumerate(full):
            priority[owner[j]] = max(priority[owner[j]], len(s) - 1)
    return CoverInstance(full, tuple(float(w) for w in weight), tuple(owner), tuple(priority))


def solve_mqc(inst: CoverInstance) -> CoverSolution:
    """Johnson's greedy (Fig. 4, lines 15–21): repeatedly take the subset covering the most
    uncovered selections per unit of cost (ties: lower index), kept in a lazy max-heap."""
    start = time.perf_counter()
    servers = _servers(inst)
    left = [len(s) for s in inst.serves]
    heap = [(-left[j] / inst.weight[j], j) for j in range(inst.size)]
    heapq.heapify(heap)
    covered = [False] * inst.size
    chosen: list[int] = []
    assignment = [-1] * inst.size
    while heap:
        key, j = heapq.heappop(heap)
        if left[j] == 0:
            continue
        if -key != left[j] / inst.weight[j]:
            heapq.heappush(heap, (-left[j] / inst.weight[j], j))
            continue
        chosen.append(j)
        for i in inst.serves[j]:
            if not covered[i]:
                covered[i] = True
                assignment[i] = j
                for other in servers[i]:
                    left[other] -= 1
    return _solution(inst, chosen, assignment, MQC, "heuristic", start)


def solve_mnh(inst: CoverInstance) -> CoverSolution:
    """Maximum neighbour heuristic (Fig. 5): queries by falling number of processing neighbours;
    each selection joins the first covering selection that may serve it, else becomes one."""
    start = time.perf_counter()
    by_owner: dict[int, list[int]] = {}
    for j, q in enumerate(inst.owner):
        by_owner.setdefault(q, []).append(j)
    order = sorted(by_owner, key=lambda q: (-inst.priority[q], q))
    servers = _servers(inst)
    rank: dict[int, int] = {}  # covering selection -> its position in W
    assignment = [-1] * inst.size
    for q in order:
        for i in by_owner[q]:
            ranked = [(rank[w], w) for w in servers[i] if w in rank]
            if ranked:
                assignment[i] = min(ranked)[1]
            else:
                rank[i] = len(rank)
                assignment[i] = i
    chosen = sorted(rank, key=rank.__getitem__)
    return _solution(inst, chosen, assignment, MNH, "heuristic", start)


def solve_cpsat(inst: CoverInstance, time_limit: float = 10.0, seed: int = 0,
                workers: int = 1) -> CoverSolution:
    """Exact weighted set cover with CP-SAT: one Boolean per selection, each selection covered
    at least once, minimal total weight. The better heuristic cover is the hint and an upper
    bound on the objective, so a cover found in time is never worse than MQC or MNH; when
    CP-SAT finds none within the limit the MQC cover is returned with status `fallback`."""
    start = time.perf_counter()
    from ortools.sat.python import cp_model  # 0.4 s to import, in the limit: only when used

    # CP-SAT overruns its own limit on large models (presolve, measured up to ~30%), so the
    # heuristics, the model and the search share 80% of the limit, the rest kept for that and
    # for reading the cover back; past it the heuristic cover is returned (building the model
    # of a 60,000-selection batch alone took 8 s of a 2 s limit)
    deadline = start + 0.8 * time_limit
    heuristic = solve_mqc(inst)
    if time.perf_counter() < deadline:
        heuristic = min((heuristic, solve_mnh(inst)), key=lambda s: (s.cost, len(s.chosen)))

    def fallback() -> CoverSolution:
        return CoverSolution(heuristic.chosen, heuristic.assignment, heuristic.cost, MQC,
                             "fallback", time.perf_counter() - start)

    if time.perf_counter() >= deadline:
        return fallback()
    model = cp_model.CpModel()
    take = [model.NewBoolVar(f"take{j}") for j in range(inst.size)]
    servers = _servers(inst)
    for i in range(inst.size):
        if i % 1024 == 0 and time.perf_counter() >= deadline:
            return fallback()
        model.AddBoolOr([take[j] for j in servers[i]])
    costs = [max(1, round(w * WEIGHT_SCALE)) for w in inst.weight]
    objective = sum(c * t for c, t in zip(costs, take, strict=True))
    model.Add(objective <= sum(costs[j] for j in heuristic.chosen))
    model.Minimize(objective)
    chosen_hint = set(heuristic.chosen)
    for j, var in enumerate(take):
        model.AddHint(var, j in chosen_hint)
    if time.perf_counter() >= deadline:
        return fallback()
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.001, deadline - time.perf_counter())
    solver.parameters.num_search_workers = workers
    solver.parameters.random_seed = seed
    status = solver.Solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return fallback()
    chosen = [j for j in range(inst.size) if solver.Value(take[j])]
    assignment = [_chosen_server(inst, servers[i], set(chosen), i) for i in range(inst.size)]
    value, bound = solver.ObjectiveValue(), solver.BestObjectiveBound()
    gap = 0.0 if status == cp_model.OPTIMAL else max(0.0, (value - bound) / value)
    solution = _solution(inst, chosen, assignment, CPSAT,
                         "optimal" if status == cp_model.OPTIMAL else "feasible", start)
    return CoverSolution(solution.chosen, solution.assignment, solution.cost, CPSAT,
                         solution.status, solution.seconds, gap)


def fits_cpsat(inst: CoverInstance, time_limit: float) -> bool:
    """Whether CP-SAT is expected to settle the instance within the time limit."""
    return fits_budget(inst.entries, time_limit)


def fits_budget(entries: int, time_limit: float) -> bool:
    """Whether CP-SAT settles a cover relation of `entries` pairs within the time limit."""
    return entries <= CPSAT_ENTRIES_PER_SECOND * time_limit


def solve_auto(inst: CoverInstance, time_limit: float = 10.0, seed: int = 0) -> CoverSolution:
    """CP-SAT when the instance fits the time budget, else MQC (the better heuristic in seed
    000 §5.1); `reason` says which and why."""
    if fits_cpsat(inst, time_limit):
        result = solve_cpsat(inst, time_limit, seed)
        reason = (f"{inst.size} selections fit CP-SAT's {time_limit:g} s budget")
    else:
        result = solve_mqc(inst)
        reason = (f"{inst.size} selections ({inst.entries} reuse pairs) exceed what CP-SAT "
                  f"settles in {time_limit:g} s: greedy MQC")
    return CoverSolution(result.chosen, result.assignment, result.cost, result.solver,
                         result.status, result.seconds, result.gap, reason)


def solve(inst: CoverInstance, solver: str = AUTO, time_limit: float = 10.0,
          seed: int = 0) -> CoverSolution:
    """Dispatch by solver name (auto, cpsat, mqc, mnh)."""
    if solver == AUTO:
        return solve_auto(inst, time_limit, seed)
    if solver == CPSAT:
        return solve_cpsat(inst, time_limit, seed)
    if solver == MQC:
        return solve_mqc(inst)
    if solver == MNH:
        return solve_mnh(inst)
    raise ValueError(f"unknown covering solver {solver!r} ({', '.join(SOLVERS)})")


def _chosen_server(inst: CoverInstance, servers: list[int], chosen: set[int], i: int) -> int:
    """The chosen selection serving i: itself when chosen, else its lowest-index server."""
    return i if i in chosen else min(j for j in servers if j in chosen)


def _servers(inst: CoverInstance) -> list[list[int]]:
    """Per selection, the selections that may serve it."""
    servers: list[list[int]] = [[] for _ in range(inst.size)]
    for j, served in enumerate(inst.serves):
        for i in served:
            servers[i].append(j)
    return servers


def _solution(inst: CoverInstance, chosen: list[int], assignment: list[int], solver: str,
              status: str, start: float) -> CoverSolution:
    cost = sum(inst.weight[j] for j in chosen)
    assignment = list(assignment)
    for j in chosen:  # a selection that is executed uses its own result
        assignment[j] = j
    return CoverSolution(tuple(chosen), tuple(assignment), cost, solver, status,
                         time.perf_counter() - start)
