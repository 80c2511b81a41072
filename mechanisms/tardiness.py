"""tardiness: sequence jobs on one machine to minimise total weighted tardiness (1||sum w_j T_j).

Parameters (all can be given as data; jobs are numbered 1..n):
- ``processing_times``: the true processing time of each of the n jobs (hidden, positive)
- ``due_dates``: the true due date of each job (hidden, non-negative; time 0 is when the machine starts)
- ``weights``: what each time unit of lateness of a job costs (hidden, positive)
- ``sticker_due_dates``: the posted due date of each job (a decoy: a noisy estimate of the due date that
  the default policy trusts; when omitted from data it equals ``due_dates``; non-negative)

Dynamics: the machine starts at time 0 and runs the sequence without breaks, so a job's completion time
C_j is the total processing time of itself and every job before it; its tardiness is T_j = max(0, C_j - d_j).
The agent appends jobs to the sequence or inserts them at a position, can undo the last addition, take a
job out or clear the sequence, then releases the sequence (or finishes). A job left out of the sequence at
the end is charged as if it completed at time P = the total processing time of all jobs (appending it
anywhere finishes it no later, so doing nothing is worse than any complete sequence).
u = -(sum of w_j T_j).

The knobs: ``size`` is the number of jobs n (4..18); ``horizon`` is the due-date tightness level L (1..5):
the sampler draws due dates uniformly from P (1 - TF -+ 0.3) (clipped at 0, the classic tardiness-factor /
due-date-range generator with range 0.6) with tardiness factor TF = 0.2 + 0.15 (L - 1), so level 1 is
loose (few late jobs) and level 5 tight (most jobs late).

Probing: one probe reveals one job's processing time, due date and weight together (a group), another the
total processing time; ``probe_allowance`` covers every probe and the difficulty tiers grant a share of it (at the
hard and frontier tiers full information does not fit). Decisions are bulk: one call appends a list of jobs.

Solved exactly by dynamic programming over subsets: the job finishing last among a set S ends at p(S), so
f(S) = min over j in S of f(S minus j) + w_j max(0, p(S) - d_j), computed layer by layer (sets of equal
size) with numpy, 2^n n work. Checked against enumeration of every permutation in the tests.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms.base import ActionError, Mechanism, Solution, Tier, require_int, require_int_list
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.registry import register
from schemas.envspec import Action, ArgSpec, OperationSpec

MAX_JOBS = 18  # the subset DP touches 2^n n (set, last job) pairs: about 4.7 million at 18 jobs (0.1 s)
DUE_DATE_RANGE = 0.6
STICKER_REDRAWS = 24  # the sampler redraws posted due dates that would make the default near-optimal
NEAR_OPTIMAL = 0.97  # ... that is, a default position (u0 - u_idle) / (u* - u_idle) above this


class TardinessParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    processing_times: list[float] = Field(min_length=1, max_length=MAX_JOBS)
    due_dates: list[float]
    weights: list[float]
    sticker_due_dates: list[float]

    @model_validator(mode="before")
    @classmethod
    def _default_sticker(cls, data: Any) -> Any:
        if isinstance(data, dict) and "sticker_due_dates" not in data and "due_dates" in data:
            data = {**data, "sticker_due_dates": data["due_dates"]}
        return data

    @model_validator(mode="after")
    def _shapes(self) -> TardinessParams:
        n = len(self.processing_times)
        for name in ("due_dates", "weights", "sticker_due_dates"):
            if len(getattr(self, name)) != n:
                raise ValueError(f"{name} must have one entry per job ({n}), got {len(getattr(self, name))}")
        for name in ("processing_times", "due_dates", "weights", "sticker_due_dates"):
            if not all(math.isfinite(x) for x in getattr(self, name)):
                raise ValueError(f"{name} must be finite numbers")
        for name in ("processing_times", "weights"):
            if min(getattr(self, name)) <= 0:
                raise ValueError(f"{name} must be positive")
        for name in ("due_dates", "sticker_due_dates"):
            if min(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be non-negative")
        return self

    @property
    def jobs(self) -> int:
        return len(self.processing_times)

    @property
    def total_work(self) -> float:
        return float(sum(self.processing_times))


def _require_int(args: dict[str, Any], name: str, low: int, high: int) -> int:
    """``require_int`` that also refuses NaN and infinities with an ActionError."""
    value = args.get(name)
    if isinstance(value, float) and not math.isfinite(value):
        raise ActionError(f"argument {name!r} must be an integer, got {value!r}")
    return require_int(args, name, low, high)


def sequence_cost(p: TardinessParams, sequence: list[int], unscheduled: list[int]) -> float:
    """Total weighted tardiness of the sequence (1-based jobs) plus the charge for the jobs left out."""
    total, clock = 0.0, 0.0
    for job in sequence:
        clock += p.processing_times[job - 1]
        total += p.weights[job - 1] * max(0.0, clock - p.due_dates[job - 1])
    end = p.total_work
    return total + sum(p.weights[j - 1] * max(0.0, end - p.due_dates[j - 1]) for j in unscheduled)


@lru_cache(maxsize=MAX_JOBS + 1)
def _layers(n: int) -> tuple[np.ndarray, ...]:
    """The subsets of n jobs (bit masks) grouped by size 1..n."""
    masks = np.arange(1 << n, dtype=np.int64)
    counts = np.zeros(1 << n, dtype=np.int64)
    for b in range(n):
        counts += (masks >> b) & 1
    return tuple(masks[counts == k] for k in range(1, n + 1))


def optimal_sequence(p: TardinessParams) -> tuple[list[int], float]:
    """An optimal sequence (1-based jobs) and its cost by the subset DP (ties: the smaller job number last)."""
    n = p.jobs
    work = np.zeros(1 << n)
    for b in range(n):
        work[1 << b: 1 << (b + 1)] = work[: 1 << b] + p.processing_times[b]
    best = np.zeros(1 << n)
    last = np.full(1 << n, -1, dtype=np.int64)
    for layer in _layers(n):
        value = np.full(len(layer), np.inf)
        choice = np.full(len(layer), -1, dtype=np.int64)
        late = work[layer]
        for j in range(n):
            bit = 1 << j
            has = (layer & bit) != 0
            candidate = np.where(has, best[layer ^ bit] + p.weights[j] * np.maximum(0.0, late - p.due_dates[j]),
                                 np.inf)
            better = candidate < value
            value = np.where(better, candidate, value)
            choice = np.where(better, j, choice)
        best[layer] = value
        last[layer] = choice
    sequence: list[int] = []
    remaining = (1 << n) - 1
    while remaining:
        j = int(last[remaining])
        sequence.append(j + 1)
        remaining ^= 1 << j
    sequence.reverse()
    return sequence, float(best[(1 << n) - 1])


class Tardiness(Mechanism[TardinessParams]):
    id = "tardiness"
    version = 2
    group = "far_ood_probe"
    summary = "sequence jobs on one machine to minimise total weighted tardiness; dynamic programming over subsets"
    Params = TardinessParams
    size_range = (4, MAX_JOBS)  # jobs
    horizon_range = (1, 5)  # due-date tightness level
    default_size = 8
    default_horizon = 3
    difficulty_grid = [(6, 2), (8, 3), (10, 3), (12, 4), (14, 5)]
    difficulty_tiers = {
        "easy": Tier(((4, 1), (5, 1), (6, 1)), 1.0),
        "medium": Tier(((8, 3), (10, 3), (12, 4)), 1.0),
        "hard": Tier(((10, 3), (11, 3)), 0.5),
        "frontier": Tier(((16, 4), (16, 5), (18, 5)), 0.3),
    }
    u0_band = (0.3, 0.99)
    turn_slack = 1  # tight probe budget: at the hard and frontier tiers probing every job does not fit

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> TardinessParams:
        n, level = int(size), int(horizon)
        processing = rng.integers(1, 21, n).astype(float)
        weights = rng.integers(1, 11, n).astype(float)
        total = float(processing.sum())
        factor = 0.2 + 0.15 * (level - 1)
        low, high = total * (1 - factor - DUE_DATE_RANGE / 2), total * (1 - factor + DUE_DATE_RANGE / 2)
        due = np.maximum(np.round(rng.uniform(low, high, n)), 0)
        data = {"processing_times": processing.tolist(), "due_dates": due.tolist(), "weights": weights.tolist()}
        params = TardinessParams(**data, sticker_due_dates=self._posted(rng, due, total))
        u_star = self.solve(params).u_star
        u_idle = self.run(params, self.idle_actions(params))
        for _ in range(STICKER_REDRAWS):
            u0 = self.run(params, self.default_actions(params))
            if u0 - u_idle <= NEAR_OPTIMAL * (u_star - u_idle) and u0 < u_star:
                break
            params = TardinessParams(**data, sticker_due_dates=self._posted(rng, due, total))
        return params

    @staticmethod
    def _posted(rng: np.random.Generator, due: np.ndarray, total: float) -> list[float]:
        """Posted due dates: the true ones shifted by a normal error of a quarter of the total work."""
        return np.maximum(np.round(due + rng.normal(0.0, 0.25 * total, len(due))), 0).tolist()

    def solve(self, params: TardinessParams) -> Solution:
        p = params
        sequence, best = optimal_sequence(p)
        actions = [Action(op="schedule_jobs", args={"jobs": sequence}), Action(op="release_sequence")]
        u_star = -sequence_cost(p, sequence, [])  # the replayed arithmetic, so replay reproduces u* exactly
        if abs(-u_star - best) > 1e-9 * max(1.0, best):
            raise RuntimeError(f"subset DP cost {best} differs from the replayed sequence cost {-u_star}")
        facts = {"jobs": p.jobs, "sequence": sequence, "subsets": 1 << p.jobs,
                 "late_jobs": sum(1 for j in sequence if self._completion(p, sequence, j) > p.due_dates[j - 1])}
        return Solution(u_star, actions, "dynamic programming over subsets (last job of each set)", facts)

    @staticmethod
    def _completion(p: TardinessParams, sequence: list[int], job: int) -> float:
        return float(sum(p.processing_times[j - 1] for j in sequence[: sequence.index(job) + 1]))

    def default_actions(self, params: TardinessParams) -> list[Action]:
        """Earliest posted due date first (ties by job number), appended in one call; trusts the sticker, never
        probes."""
        p = params
        order = sorted(range(p.jobs), key=lambda j: (p.sticker_due_dates[j], j))
        return [Action(op="schedule_jobs", args={"jobs": [j + 1 for j in order]}), Action(op="release_sequence")]

    def operations(self, params: TardinessParams) -> list[OperationSpec]:
        n = params.jobs
        job = {"job": ArgSpec(type="integer", description="job number", minimum=1, maximum=n)}
        jobs = {"jobs": ArgSpec(type="array", items="integer", description="job numbers in the order to run them",
                                minimum=1, maximum=n, max_items=n)}
        position = {"position": ArgSpec(type="integer", description="position in the sequence, 1 = first",
                                        minimum=1, maximum=n)}
        return [
            OperationSpec(name="probe_job", kind="probe",
                          summary="true processing time, due date and weight of one job", args=job),
            OperationSpec(name="probe_total_work", kind="probe", summary="true total processing time of all jobs"),
            OperationSpec(name="read_posted_due_date", kind="info", summary="the posted due date of one job",
                          args=job, decoy=True, estimates="due_date"),
            OperationSpec(name="list_jobs", kind="info", summary="the job numbers and the jobs not yet sequenced"),
            OperationSpec(name="view_sequence", kind="info", summary="the current sequence of jobs"),
            OperationSpec(name="schedule_jobs", kind="decision",
                          summary="append one or more jobs, in the order given, to the end of the sequence", args=jobs),
            OperationSpec(name="insert_job", kind="decision",
                          summary="insert one job at a position of the sequence (later jobs move back)",
                          args={**job, **position}),
            OperationSpec(name="undo_last", kind="decision", summary="take back the most recently added job"),
            OperationSpec(name="remove_job", kind="decision",
                          summary="take one job out of the sequence (later jobs move up)", args=job),
            OperationSpec(name="clear_sequence", kind="decision", summary="empty the sequence"),
            OperationSpec(name="release_sequence", kind="clock",
                          summary="release the sequence to the machine; this ends the episode"),
            OperationSpec(name="finish", kind="clock", summary="stop now; the current sequence stands"),
        ]

    def initial_state(self, params: TardinessParams) -> dict[str, Any]:
        return {"sequence": [], "history": [], "released": False, "finished": False}

    @staticmethod
    def _unscheduled(p: TardinessParams, state: dict[str, Any]) -> list[int]:
        return [j for j in range(1, p.jobs + 1) if j not in state["sequence"]]

    def _view(self, p: TardinessParams, state: dict[str, Any]) -> dict[str, Any]:
        return {"sequence": list(state["sequence"]), "unscheduled_jobs": self._unscheduled(p, state)}

    def _ledger(self, p: TardinessParams, state: dict[str, Any]) -> dict[str, Any]:
        """The run as a ledger states it: the sequence, the late jobs and the total weighted tardiness."""
        clock, late = 0.0, []
        for j in state["sequence"]:
            clock += p.processing_times[j - 1]
            if clock > p.due_dates[j - 1]:
                late.append(j)
        return {**self._view(p, state), "late_jobs": late,
                "total_weighted_tardiness": round(-self.utility(p, state), 6)}

    def apply(self, params: TardinessParams, state: dict[str, Any], action: Action) -> dict[str, Any]:
        p, op, args = params, action.op, action.args
        if op == "probe_job":
            j = _require_int(args, "job", 1, p.jobs)
            return {"job": j, "processing_time": p.processing_times[j - 1], "due_date": p.due_dates[j - 1],
                    "weight": p.weights[j - 1]}
        if op == "probe_total_work":
            return {"total_processing_time": p.total_work}
        if op == "read_posted_due_date":
            j = _require_int(args, "job", 1, p.jobs)
            return {"job": j, "posted_due_date": p.sticker_due_dates[j - 1]}
        if op == "list_jobs":
            return {"jobs": list(range(1, p.jobs + 1)), "unscheduled_jobs": self._unscheduled(p, state)}
        if op == "view_sequence":
            return self._view(p, state)
        if op == "schedule_jobs":
            chosen = require_int_list(args, "jobs", 1, p.jobs)
            placed = [j for j in chosen if j in state["sequence"]]
            if placed:
                raise ActionError(f"job {placed[0]} is already at position {state['sequence'].index(placed[0]) + 1}")
            state["sequence"].extend(chosen)
            state["history"].extend(chosen)
            return {"appended": list(chosen), **self._view(p, state)}
        if op == "insert_job":
            j = _require_int(args, "job", 1, p.jobs)
            k = _require_int(args, "position", 1, p.jobs)
            if j in state["sequence"]:
                raise ActionError(f"job {j} is already at position {state['sequence'].index(j) + 1}")
            if k > len(state["sequence"]) + 1:
                raise ActionError(f"position {k} is beyond the end of the sequence "
                                  f"({len(state['sequence'])} jobs so far)")
            state["sequence"].insert(k - 1, j)
            state["history"].append(j)
            return {"inserted": j, "position": k, **self._view(p, state)}
        if op == "undo_last":
            if not state["history"]:
                raise ActionError("there is no added job to undo")
            j = state["history"].pop()
            state["sequence"].remove(j)
            return {"undone": j, **self._view(p, state)}
        if op == "remove_job":
            j = _require_int(args, "job", 1, p.jobs)
            if j not in state["sequence"]:
                raise ActionError(f"job {j} is not in the sequence")
            state["sequence"].remove(j)
            state["history"].remove(j)
            return {"removed": j, **self._view(p, state)}
        if op == "clear_sequence":
            state.update(sequence=[], history=[])
            return self._view(p, state)
        if op == "release_sequence":
            state.update(released=True, finished=True)
            return {**self._ledger(p, state), "finished": True}
        if op == "finish":
            state["finished"] = True
            return {**self._ledger(p, state), "finished": True}
        raise ActionError(f"unknown operation {op!r}")

    def utility(self, params: TardinessParams, state: dict[str, Any]) -> float:
        return -sequence_cost(params, state["sequence"], self._unscheduled(params, state))

    def facts(self, params: TardinessParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        rows = "; ".join(f"{j + 1}: {p.processing_times[j]:g}, {p.due_dates[j]:g}, {p.weights[j]:g}"
                         for j in range(p.jobs))
        posted = "; ".join(f"{j + 1}: {p.sticker_due_dates[j]:g}" for j in range(p.jobs))
        return [
            rule("structure", f"There are {p.jobs} {v['jobs']} for one {v['machine']}, numbered 1 to {p.jobs}.",
                 p.jobs),
            rule("timing", f"The {v['machine']} starts at time 0 and runs the sequence one {v['job']} after another "
                 f"without breaks: each {v['job']}'s completion time is the processing time of itself and of every "
                 f"{v['job']} before it. A {v['job']} that completes after its due date is late, and each time unit "
                 f"of lateness costs its weight in {v['currency']}; completing early earns nothing."),
            probed("jobs", "probe_job", f"The true processing time, due date and weight of each {v['job']}, in that "
                   f"order: {rows}.", [x for j in range(p.jobs)
                                       for x in (p.processing_times[j], p.due_dates[j], p.weights[j])]),
            probed("total_work", "probe_total_work", f"The total processing time of all {v['jobs']} is "
                   f"{p.total_work:g}.", [p.total_work]),
            probed("posted_due_dates", "read_posted_due_date", f"The {v['sticker']} posts these due dates (an outside "
                   f"estimate, not the true due date): {posted}.", p.sticker_due_dates),
            rule("left_out", f"A {v['job']} left out of the sequence when the episode ends is charged as if it "
                 f"completed at the total processing time of all {v['jobs']}, the latest any {v['job']} can "
                 "complete."),
            rule(OBJECTIVE, f"Your result is minus the total weighted tardiness in {v['currency']}: the sum over all "
                 f"{v['jobs']} of weight times max(0, completion time minus due date), where a left-out "
                 f"{v['job']} completes at the total processing time."),
            rule(END, f"Releasing the sequence to the {v['machine']} ends the episode, and so does walking away; "
                 "either way the sequence as it stands counts."),
            rule(BUDGET_END, f"If the turns run out before you release, the sequence as it stands counts, and every "
                 f"{v['job']} left out of it is charged as a left-out {v['job']}."),
        ]

    def probe_order(self, params: TardinessParams) -> list[Action]:
        """The total work first (it fixes the mean processing time of the jobs not probed), then each job, the
        earliest posted due date first."""
        p = params
        order = sorted(range(1, p.jobs + 1), key=lambda j: (p.sticker_due_dates[j - 1], j))
        return [Action(op="probe_total_work"), *(Action(op="probe_job", args={"job": j}) for j in order)]

    def believed(self, params: TardinessParams, probed: list[Action]) -> TardinessParams:
        """Probed jobs are true; a job not probed has its posted due date, the mean weight of the probed jobs (5
        when none is) and an equal share of the work not yet accounted for (the total work when probed, else the
        mean processing time of the probed jobs, 10 when none is)."""
        p = params
        known = sorted({a.args["job"] for a in probed if a.op == "probe_job"})
        rest = [j for j in range(1, p.jobs + 1) if j not in known]
        weight = float(np.mean([p.weights[j - 1] for j in known])) if known else 5.0
        processing = float(np.mean([p.processing_times[j - 1] for j in known])) if known else 10.0
        if rest and any(a.op == "probe_total_work" for a in probed):
            processing = max(1e-6, (p.total_work - sum(p.processing_times[j - 1] for j in known)) / len(rest))

        def pick(truth: list[float], guess: list[float]) -> list[float]:
            return [truth[j - 1] if j in known else guess[j - 1] for j in range(1, p.jobs + 1)]

        return TardinessParams(processing_times=pick(p.processing_times, [processing] * p.jobs),
                               due_dates=pick(p.due_dates, p.sticker_due_dates),
                               weights=pick(p.weights, [weight] * p.jobs), sticker_due_dates=list(p.sticker_due_dates))

    def heuristic_actions(self, params: TardinessParams) -> dict[str, list[Action]]:
        """edd_surveyed: survey every job, then earliest true due date first. wspt_surveyed: survey every job, then
        the shortest processing time per unit of weight first (Smith's rule). edd_most_surveyed: survey the two
        thirds of the jobs posted as due earliest, then earliest due date first (true where surveyed, posted
        elsewhere). wspt_most_surveyed: the same surveys, the surveyed jobs first by Smith's rule, then the rest by
        posted due date."""
        p = params
        jobs = range(1, p.jobs + 1)
        surveys = [Action(op="probe_job", args={"job": j}) for j in jobs]
        by_posted = sorted(jobs, key=lambda j: (p.sticker_due_dates[j - 1], j))
        most = by_posted[: (2 * p.jobs + 2) // 3]
        known = set(most)
        edd = sorted(jobs, key=lambda j: (p.due_dates[j - 1], j))
        wspt = sorted(jobs, key=lambda j: (p.processing_times[j - 1] / p.weights[j - 1], j))
        edd_most = sorted(jobs, key=lambda j: (p.due_dates[j - 1] if j in known else p.sticker_due_dates[j - 1], j))
        wspt_most = [*sorted(most, key=lambda j: (p.processing_times[j - 1] / p.weights[j - 1], j)),
                     *(j for j in by_posted if j not in known)]
        most_surveys = [Action(op="probe_job", args={"job": j}) for j in most]
        release = Action(op="release_sequence")

        def plan(order: list[int]) -> list[Action]:
            return [Action(op="schedule_jobs", args={"jobs": list(order)}), release]

        return {"edd_surveyed": [*surveys, *plan(edd)], "wspt_surveyed": [*surveys, *plan(wspt)],
                "edd_most_surveyed": [*most_surveys, *plan(edd_most)],
                "wspt_most_surveyed": [*most_surveys, *plan(wspt_most)]}

    def secret_numbers(self, params: TardinessParams) -> list[float]:
        p = params
        return [*p.processing_times, *(d for d in p.due_dates if d != 0), *p.weights, p.total_work]

    def public_numbers(self, params: TardinessParams) -> list[float]:
        return [0, params.jobs, *range(1, params.jobs + 1)]  # 0: the time the machine starts

    def probe_allowance(self, params: TardinessParams) -> int:
        """Every probe: each job once and the total work (the tiers grant a share of it)."""
        return params.jobs + 1


register(Tardiness())
