"""tardiness: sequence jobs on one machine to minimise total weighted tardiness (1||sum w_j T_j).

Parameters (all can be given as data; jobs are numbered 1..n):
- ``processing_times``: the true processing time of each of the n jobs (hidden, positive)
- ``due_dates``: the true due date of each job (hidden, non-negative; time 0 is when the machine starts)
- ``weights``: what each time unit of lateness of a job costs (hidden, positive)
- ``sticker_due_dates``, ``sticker_processing_times``, ``sticker_weights``: the posted due date, processing time and
  weight of each job (decoys: noisy estimates that the default policy trusts; when omitted from data they equal the
  true figures)

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

Probing: one call reads the posted sheet (every job's posted due date, processing time and weight, outside
estimates); one probe verifies one job's true processing time, due date and weight together (a group), another the
total processing time; ``probe_allowance`` covers every probe and the difficulty tiers grant a share of it (at the
hard and frontier tiers full information does not fit: the agent chooses which jobs to verify, and the jobs whose
lateness is posted as costliest are worth it most). Decisions are bulk: one call appends a list of jobs. The default
reads the sheet, trusts it and releases the optimal sequence of the posted figures.

Calibration (issue 26; 12 environments per tier from each tier's first cell, template setter): the informed agent
verifies the heaviest posted weights first, the naive prober in number order; the heuristics are ATC on the sheet
and EDD, Smith's rule and ATC on jobs inspected in number order while the turns leave room to act. At the frontier
(0.3 of the probes) the informed agent scored 0.65, the naive prober 0.24, the best heuristic 0.38 (ATC on listed
inspections, up to about 0.5: the robust rule nearly matches an exact plan of a noisy belief), 7 of 12 admitted as
frontier; the hard tier admits about a third (an environment there must have a heuristic between 0.5 and 0.75 and a
skill gap, or it measures medium or frontier).

Solved exactly by dynamic programming over subsets: the job finishing last among a set S ends at p(S), so
f(S) = min over j in S of f(S minus j) + w_j max(0, p(S) - d_j), computed layer by layer (sets of equal
size) with numpy, 2^n n work. Checked against enumeration of every permutation in the tests.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Annotated, Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mechanisms._jobs import (
    GUESSED_TIME,
    GUESSED_WEIGHT,
    SHEET,
    Job,
    JobFamily,
    JobNumbers,
    Jobs,
    believed_figure,
    by_job,
    draw_jobs,
    job_probes,
    lognormal_posts,
    mean_or,
    posted,
    probe_total_work,
    scaled_to_total,
    smith,
    total_work_fact,
    undo_last,
    verified,
    verify_while,
)
from mechanisms.base import NEAR_OPTIMAL, ActionError, Mechanism, Solution, Tier
from mechanisms.facts import BUDGET_END, END, OBJECTIVE, Fact, probed, rule
from mechanisms.operations import Between, Observation, State, clock, decision, info, probe
from mechanisms.params import finite, non_negative, one_entry_each, positive, stickers_default_to_truth
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import a, capital, figure
from mechanisms.registry import register
from schemas.envspec import Action

MAX_JOBS = 18  # the subset DP touches 2^n n (set, last job) pairs: about 4.7 million at 18 jobs (0.1 s)
DUE_DATE_RANGE = 0.6
# the posted figures' errors: due dates a normal error of this share of the total work, times and weights log-normal
POSTED_DUE_ERROR, POSTED_TIME_ERROR, POSTED_WEIGHT_ERROR = 0.2, 0.1, 0.3


class TardinessParams(JobNumbers, BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    processing_times: list[float] = Field(min_length=1, max_length=MAX_JOBS)
    due_dates: list[float]
    weights: list[float]
    sticker_due_dates: list[float]
    sticker_processing_times: list[float]
    sticker_weights: list[float]

    _default_sticker = stickers_default_to_truth(sticker_due_dates="due_dates",
                                                 sticker_processing_times="processing_times", sticker_weights="weights")

    @model_validator(mode="after")
    def _shapes(self) -> TardinessParams:
        n = len(self.processing_times)
        stickers = ("sticker_due_dates", "sticker_processing_times", "sticker_weights")
        for name in ("due_dates", "weights", *stickers):
            one_entry_each(name, getattr(self, name), n, "job")
        for name in ("processing_times", "due_dates", "weights", *stickers):
            finite(name, getattr(self, name))
        for name in ("processing_times", "weights", "sticker_processing_times", "sticker_weights"):
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
    version = 4  # issue 27: the prose is part of the spec
    group = "far_ood_probe"
    summary = "sequence jobs on one machine to minimise total weighted tardiness; dynamic programming over subsets"
    Params = TardinessParams
    size_range = (4, MAX_JOBS)  # jobs
    horizon_range = (1, 5)  # due-date tightness level
    default_size = 8
    default_horizon = 3
    difficulty_grid = [(6, 2), (8, 3), (10, 3), (12, 4), (14, 5)]
    difficulty_tiers = {  # measured (see the module docstring's calibration)
        "easy": Tier(((4, 1), (5, 1), (6, 1)), 1.0),
        "medium": Tier(((10, 3), (11, 3), (12, 4)), 0.8),
        "hard": Tier(((14, 4), (14, 5)), 0.4),
        "frontier": Tier(((18, 5), (16, 5), (12, 5)), 0.3),
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
            lambda: TardinessParams(**data, sticker_due_dates=self._posted(rng, due, total),
                                    sticker_processing_times=lognormal_posts(rng, processing, POSTED_TIME_ERROR),
                                    sticker_weights=lognormal_posts(rng, weights, POSTED_WEIGHT_ERROR)), misleading)

    @staticmethod
    def _posted(rng: np.random.Generator, due: np.ndarray, total: float) -> list[float]:
        """Posted due dates: the true ones shifted by a normal error (POSTED_DUE_ERROR of the total work), rounded,
        at least 0."""
        return np.maximum(np.round(due + rng.normal(0.0, POSTED_DUE_ERROR * total, len(due))), 0).tolist()

    def solve(self, params: TardinessParams) -> Solution:
        p = params
        sequence, best = optimal_sequence(p)
        actions = sequence_actions(sequence)
        u_star = -sequence_cost(p, sequence, [])  # the replayed arithmetic, so replay reproduces u* exactly
        if abs(-u_star - best) > 1e-9 * max(1.0, best):
            raise RuntimeError(f"subset DP cost {best} differs from the replayed sequence cost {-u_star}")
        facts = {"jobs": p.jobs, "sequence": sequence, "subsets": 1 << p.jobs,
                 "late_jobs": sum(1 for j in sequence if self._completion(p, sequence, j) > p.due_dates[j - 1])}
        return Solution(u_star, actions, "dynamic programming over subsets (last job of each set)", facts)

    @staticmethod
    def _completion(p: TardinessParams, sequence: list[int], job: int) -> float:
        return float(sum(p.processing_times[j - 1] for j in sequence[: sequence.index(job) + 1]))

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted sheet, trusts it and releases the optimal sequence of the posted figures (appended in one
        call); verifies nothing."""
        seat.call(SHEET)
        self.act_on_belief(seat, self.believed(seat.known))

    def initial_state(self, params: TardinessParams) -> dict[str, Any]:
        return {"sequence": [], "history": [], "released": False, "finished": False}

    @staticmethod
    def _unscheduled(p: TardinessParams, state: dict[str, Any]) -> list[int]:
        return [j for j in range(1, p.jobs + 1) if j not in state["sequence"]]

    def _view(self, p: TardinessParams, state: dict[str, Any]) -> dict[str, Any]:
        return {"sequence": list(state["sequence"]), "unscheduled_jobs": self._unscheduled(p, state)}

    def ledger(self, params: TardinessParams, state: dict[str, Any]) -> dict[str, Any]:
        """The run as a ledger states it: the sequence, each job's completion time, the late jobs and what each
        one's lateness costs, the charge for the jobs left out, the makespan and the total weighted tardiness."""
        p = params
        clock, completion, late, cost = 0.0, {}, [], {}
        for j in state["sequence"]:
            clock += p.processing_times[j - 1]
            completion[f"job {j}"] = clock
            if clock > p.due_dates[j - 1]:
                late.append(j)
                cost[f"job {j}"] = p.weights[j - 1] * (clock - p.due_dates[j - 1])
        left_out = self._unscheduled(p, state)
        charge = sum(p.weights[j - 1] * max(0.0, p.total_work - p.due_dates[j - 1]) for j in left_out)
        return {**self._view(p, state), "completion_times": completion, "makespan": clock, "late_jobs": late,
                "weighted_tardiness_by_job": cost, "left_out_charge": charge,
                "total_weighted_tardiness": -self.utility(p, state)}

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
    def read_posted_jobs(self, p: TardinessParams, state: State) -> Observation:
        """the posted due date, processing time and weight of every job: outside estimates, not the true figures"""
        return {"posted_due_dates": by_job(p.sticker_due_dates),
                "posted_processing_times": by_job(p.sticker_processing_times),
                "posted_weights": by_job(p.sticker_weights)}

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
        rows = "; ".join(f"{j + 1}: {figure(p.processing_times[j])}, {figure(p.due_dates[j])}, {figure(p.weights[j])}"
                         for j in range(p.jobs))
        posted = "; ".join(f"{j + 1}: {figure(p.sticker_processing_times[j])}, {figure(p.sticker_due_dates[j])}, "
                           f"{figure(p.sticker_weights[j])}" for j in range(p.jobs))
        return [
            rule("structure", f"There are {p.jobs} {v['jobs']} for one {v['machine']}, numbered 1 to {p.jobs}.",
                 p.jobs),
            rule("timing", f"The {v['machine']} starts at time 0 and runs the sequence one {v['job']} after another "
                 f"without breaks: each {v['job']}'s completion time is the processing time of itself and of every "
                 f"{v['job']} before it. {capital(a(v['job']))} that completes after its due date is late, and "
                 f"each time unit "
                 f"of lateness costs its weight in {v['currency']}; completing early earns nothing."),
            probed("jobs", "probe_job", f"The true processing time, due date and weight of each {v['job']}, in that "
                   f"order: {rows}.", [x for j in range(p.jobs)
                                       for x in (p.processing_times[j], p.due_dates[j], p.weights[j])]),
            total_work_fact(p, v),
            probed("posted_figures", SHEET, f"The {v['source']} posts these processing times, due dates and "
                   f"weights of each {v['job']}, in that order (outside estimates, not the true figures): {posted}.",
                   [*p.sticker_processing_times, *p.sticker_due_dates, *p.sticker_weights]),
            rule("left_out", f"{capital(a(v['job']))} left out of the sequence when the episode ends is charged as "
                 "if it "
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

    def probe_order(self, known: Knowledge) -> list[Action]:
        """Each job, the heaviest posted weight first (what a late job's every time unit costs), then the total
        work."""
        weights = posted(known, "posted_weights") or [0.0] * known.public["jobs"]
        order = sorted(range(1, len(weights) + 1), key=lambda j: (-weights[j - 1], j))
        return [*job_probes(order), Action(op="probe_total_work")]

    def believed(self, known: Knowledge) -> TardinessParams:
        """Verified jobs are true; a job not verified has its posted due date, time and weight (when the sheet was
        not read: the mean verified figure, or 10 and 5, and half the believed total work as its due date), the
        times scaled so that the jobs not verified add up to the work not yet accounted for when the total work was
        probed."""
        seen = verified(known)
        mean = {key: mean_or([float(o[key]) for o in seen.values()], guess)
                for key, guess in (("processing_time", GUESSED_TIME), ("weight", GUESSED_WEIGHT))}
        times = scaled_to_total(known, seen, believed_figure(known, seen, "processing_time", mean["processing_time"]))
        due_guess = mean_or([float(o["due_date"]) for o in seen.values()], sum(times) / 2)
        return TardinessParams(processing_times=times, due_dates=believed_figure(known, seen, "due_date", due_guess),
                               weights=believed_figure(known, seen, "weight", mean["weight"]))

    def heuristic_policies(self) -> dict[str, Policy]:
        """Naive agents.
        - atc_posted: reads the sheet, trusts it and builds the sequence by apparent tardiness cost (see
          ``apparent_tardiness_cost``);
        - edd_listed: reads the sheet, inspects jobs' order sheets in number order while the turns leave room to
          sequence and release, then the earliest due date first, a job not inspected as posted;
        - wspt_listed: the same, then Smith's rule (shortest processing time per unit of weight first);
        - atc_listed: the same, then apparent tardiness cost."""

        def listed(arrange) -> Policy:
            def policy(seat: Seat) -> None:
                seat.call(SHEET)
                verify_while(seat, range(1, seat.known.public["jobs"] + 1), 2)
                seat.play(sequence_actions(arrange(self.believed(seat.known))))

            return policy

        def atc_posted(seat: Seat) -> None:
            seat.call(SHEET)
            seat.play(sequence_actions(apparent_tardiness_cost(self.believed(seat.known))))

        return {"atc_posted": atc_posted,
                "edd_listed": listed(lambda b: sorted(range(1, b.jobs + 1), key=lambda j: (b.due_dates[j - 1], j))),
                "wspt_listed": listed(lambda b: smith(b.processing_times, b.weights, range(1, b.jobs + 1))),
                "atc_listed": listed(apparent_tardiness_cost)}

    def secret_numbers(self, params: TardinessParams) -> list[float]:
        p = params
        return [*p.processing_times, *(d for d in p.due_dates if d != 0), *p.weights, p.total_work]

    def public_numbers(self, params: TardinessParams) -> list[float]:
        return [0, params.jobs, *range(1, params.jobs + 1)]  # 0: the time the machine starts


def apparent_tardiness_cost(p: TardinessParams) -> list[int]:
    """The sequence built job by job by apparent tardiness cost (Vepsalainen and Morton, look-ahead 2): next the job
    of the highest w / p exp(-max(0, d - p - t) / (2 mean p)) at the time t the sequence so far ends (ties: the lower
    number)."""
    scale = 2.0 * p.total_work / p.jobs
    left, clock, order = set(range(1, p.jobs + 1)), 0.0, []
    def urgency(j: int, clock: float) -> tuple[float, int]:
        slack = max(0.0, p.due_dates[j - 1] - p.processing_times[j - 1] - clock)
        return (-p.weights[j - 1] / p.processing_times[j - 1] * math.exp(-slack / scale), j)

    while left:
        job = min(left, key=lambda j: urgency(j, clock))
        order.append(job)
        left.remove(job)
        clock += p.processing_times[job - 1]
    return order


def sequence_actions(sequence: list[int]) -> list[Action]:
    """A sequence in one bulk call, then the release."""
    return [Action(op="schedule_jobs", args={"jobs": list(sequence)}), Action(op="release_sequence")]


register(Tardiness())
