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

from functools import lru_cache
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms._jobs import (
    Job,
    JobFamily,
    JobNumbers,
    Jobs,
    draw_jobs,
    job_probes,
    probe_plan,
    probe_total_work,
    smith,
    survey,
    total_work_fact,
    undo_last,
)
from mechanisms.base import NEAR_OPTIMAL, ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, non_negative, one_entry_each, positive, stickers_default_to_truth
from mechanisms.registry import register
from schemas.envspec import Action

MAX_JOBS = 18  # the subset DP touches 2^n n (set, last job) pairs: about 4.7 million at 18 jobs (0.1 s)
DUE_DATE_RANGE = 0.6


class TardinessParams(JobNumbers, BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    processing_times: list[float] = Field(min_length=1, max_length=MAX_JOBS)
    due_dates: list[float]
    weights: list[float]
    sticker_due_dates: list[float]

    _default_sticker = stickers_default_to_truth(sticker_due_dates="due_dates")

    @model_validator(mode="after")
    def _shapes(self) -> TardinessParams:
        n = len(self.processing_times)
        for name in ("due_dates", "weights", "sticker_due_dates"):
            one_entry_each(name, getattr(self, name), n, "job")
        for name in ("processing_times", "due_dates", "weights", "sticker_due_dates"):
            finite(name, getattr(self, name))
        for name in ("processing_times", "weights"):
            positive(name, getattr(self, name))
        for name in ("due_dates", "sticker_due_dates"):
            non_negative(name, getattr(self, name))
        return self


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


# a place in the sequence, 1 = first
Position = Annotated[int, Between(1, "jobs"),
                     "position in the sequence, 1 = first"]


class Tardiness(JobFamily, Mechanism[TardinessParams]):
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
        processing, weights = draw_jobs(rng, n)
        total = float(processing.sum())
        factor = 0.2 + 0.15 * (level - 1)
        low, high = total * (1 - factor - DUE_DATE_RANGE / 2), total * (1 - factor + DUE_DATE_RANGE / 2)
        due = np.maximum(np.round(rng.uniform(low, high, n)), 0)
        data = {"processing_times": processing.tolist(), "due_dates": due.tolist(), "weights": weights.tolist()}
        def misleading(u0: float, u_star: float, params: TardinessParams) -> bool:
            u_idle = self.run(params, self.idle_actions(params))  # the posted due dates do not change it
            return u0 - u_idle <= NEAR_OPTIMAL * (u_star - u_idle) and u0 < u_star

        return self.with_misleading_stickers(
            lambda: TardinessParams(**data, sticker_due_dates=self._posted(rng, due, total)), misleading)

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

    def _take_out(self, state: State, job: int) -> dict[str, Any]:
        state["sequence"].remove(job)
        return {}

    @staticmethod
    def _not_placed(state: State, job: int) -> None:
        if job in state["sequence"]:
            raise ActionError(f"job {job} is already at position {state['sequence'].index(job) + 1}")

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_job(self, p: TardinessParams, state: State, job: Job) -> Observation:
        """true processing time, due date and weight of one job"""
        return {"job": job, "processing_time": p.processing_times[job - 1], "due_date": p.due_dates[job - 1],
                "weight": p.weights[job - 1]}

    probe_total_work = probe_total_work  # the same probe as scheduling's (mechanisms._jobs)

    @info(decoy=True, estimates="due_date")
    def read_posted_due_date(self, p: TardinessParams, state: State, job: Job) -> Observation:
        """the posted due date of one job"""
        return {"job": job, "posted_due_date": p.sticker_due_dates[job - 1]}

    @info
    def list_jobs(self, p: TardinessParams, state: State) -> Observation:
        """the job numbers and the jobs not yet sequenced"""
        return {"jobs": list(range(1, p.jobs + 1)), "unscheduled_jobs": self._unscheduled(p, state)}

    @info
    def view_sequence(self, p: TardinessParams, state: State) -> Observation:
        """the current sequence of jobs"""
        return self._view(p, state)

    @decision
    def schedule_jobs(self, p: TardinessParams, state: State, jobs: Jobs) -> Observation:
        """append one or more jobs, in the order given, to the end of the sequence"""
        for j in jobs:
            self._not_placed(state, j)
        state["sequence"].extend(jobs)
        state["history"].extend(jobs)
        return {"appended": list(jobs), **self._view(p, state)}

    @decision
    def insert_job(self, p: TardinessParams, state: State, job: Job, position: Position) -> Observation:
        """insert one job at a position of the sequence (later jobs move back)"""
        self._not_placed(state, job)
        if position > len(state["sequence"]) + 1:
            raise ActionError(f"position {position} is beyond the end of the sequence "
                              f"({len(state['sequence'])} jobs so far)")
        state["sequence"].insert(position - 1, job)
        state["history"].append(job)
        return {"inserted": job, "position": position, **self._view(p, state)}

    undo_last = undo_last  # the same as scheduling's (mechanisms._jobs)

    @decision
    def remove_job(self, p: TardinessParams, state: State, job: Job) -> Observation:
        """take one job out of the sequence (later jobs move up)"""
        if job not in state["sequence"]:
            raise ActionError(f"job {job} is not in the sequence")
        return self._removed(p, state, job)

    @decision
    def clear_sequence(self, p: TardinessParams, state: State) -> Observation:
        """empty the sequence"""
        state.update(sequence=[], history=[])
        return self._view(p, state)

    @clock
    def release_sequence(self, p: TardinessParams, state: State) -> Observation:
        """release the sequence to the machine; this ends the episode"""
        return self._end(p, state, released=True)

    @clock
    def finish(self, p: TardinessParams, state: State) -> Observation:
        """stop now; the current sequence stands"""
        return self._end(p, state)

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
            total_work_fact(p, v),
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
        return probe_plan(sorted(range(1, p.jobs + 1), key=lambda j: (p.sticker_due_dates[j - 1], j)))

    def believed(self, params: TardinessParams, probed: list[Action]) -> TardinessParams:
        """Probed jobs are true; a job not probed has its posted due date, the mean weight of the probed jobs (5
        when none is) and an equal share of the work not yet accounted for (the total work when probed, else the
        mean processing time of the probed jobs, 10 when none is)."""
        p = params
        seen = survey(p, probed)
        processing = float(np.mean([p.processing_times[j - 1] for j in seen.known])) if seen.known else 10.0
        if seen.left is not None:
            processing = max(1e-6, seen.left / len(seen.rest))
        return TardinessParams(processing_times=seen.pick(p.processing_times, [processing] * p.jobs),
                               due_dates=seen.pick(p.due_dates, p.sticker_due_dates),
                               weights=seen.pick(p.weights, [seen.weight] * p.jobs),
                               sticker_due_dates=list(p.sticker_due_dates))

    def heuristic_actions(self, params: TardinessParams) -> dict[str, list[Action]]:
        """edd_surveyed: survey every job, then earliest true due date first. wspt_surveyed: survey every job, then
        the shortest processing time per unit of weight first (Smith's rule). edd_most_surveyed: survey the two
        thirds of the jobs posted as due earliest, then earliest due date first (true where surveyed, posted
        elsewhere). wspt_most_surveyed: the same surveys, the surveyed jobs first by Smith's rule, then the rest by
        posted due date."""
        p = params
        jobs = range(1, p.jobs + 1)
        surveys = job_probes(jobs)
        by_posted = sorted(jobs, key=lambda j: (p.sticker_due_dates[j - 1], j))
        most = by_posted[: (2 * p.jobs + 2) // 3]
        known = set(most)
        edd = sorted(jobs, key=lambda j: (p.due_dates[j - 1], j))
        edd_most = sorted(jobs, key=lambda j: (p.due_dates[j - 1] if j in known else p.sticker_due_dates[j - 1], j))
        wspt_most = [*smith(p, most), *(j for j in by_posted if j not in known)]
        most_surveys = job_probes(most)
        release = Action(op="release_sequence")

        def plan(order: list[int]) -> list[Action]:
            return [Action(op="schedule_jobs", args={"jobs": list(order)}), release]

        return {"edd_surveyed": [*surveys, *plan(edd)], "wspt_surveyed": [*surveys, *plan(smith(p, jobs))],
                "edd_most_surveyed": [*most_surveys, *plan(edd_most)],
                "wspt_most_surveyed": [*most_surveys, *plan(wspt_most)]}

    def secret_numbers(self, params: TardinessParams) -> list[float]:
        p = params
        return [*p.processing_times, *(d for d in p.due_dates if d != 0), *p.weights, p.total_work]

    def public_numbers(self, params: TardinessParams) -> list[float]:
        return [0, params.jobs, *range(1, params.jobs + 1)]  # 0: the time the machine starts


register(Tardiness())
