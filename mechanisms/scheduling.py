"""scheduling: jobs on identical parallel machines, minimising total weighted completion time (P||sum w_j C_j).

Parameters (all can be given as data; jobs are numbered 1..n, machines 1..m):
- ``processing_times``: the true processing time of each of the n jobs (hidden, positive)
- ``weights``: the weight of each job, i.e. what one time unit until its completion costs (hidden, positive)
- ``machines``: the number m of identical machines (public, 1..4)
- ``sticker_processing_times``, ``sticker_weights``: the posted processing time and weight of each job (decoys:
  noisy estimates that the default policy trusts; when omitted from data they equal the true figures)

Dynamics: every machine starts at time 0 and runs the jobs appended to its queue one after another
without breaks, so a job's completion time C_j is the total processing time of itself and every job
before it on its machine. The agent appends jobs to machine queues, can undo the last append, pull a job
out of a queue or clear a queue, then starts the machines (or finishes). A job left unassigned at the end
is charged as if it completed at (P - p_j) / m + p_j, P the total processing time of all jobs (appending it to
the least-loaded machine finishes it no later, so no partial schedule is worth more than the optimum).
u = -(sum of w_j C_j).

The knobs: ``size`` is the number of jobs n (4..20; at most 14 on three or more machines), ``horizon`` the
number of machines m (1..4).

Probing: one call reads the posted sheet (every job's posted processing time and weight, outside estimates); one
probe verifies one job's true processing time and weight together (a group), another the total processing time;
``probe_allowance`` covers every probe and the difficulty tiers grant a share of it (at the hard and frontier tiers
full information does not fit: the agent chooses which jobs to verify, and the jobs that carry the most posted
weighted work are worth it most). Decisions are bulk: one call appends a list of jobs to one machine's queue. The
default reads the sheet, trusts it and plays the optimal schedule of the posted figures.

Calibration (issue 26; 12 environments per tier from each tier's first cell, template setter): the informed agent
verifies the most posted weighted work (posted time times posted weight) first, the naive prober in number order;
the heuristics are Smith's rule dealt out on the sheet and list scheduling (Smith's order or the shortest time) on
jobs timed in number order while the turns leave room to act. With the weights unposted (issue 26's first sheet
showed times only) choosing what to verify beat number order by 0.00 to 0.09 at the frontier cells: every job's
unknown weight mattered alike. At the frontier (0.3 of the probes, two machines) the informed agent scored 0.63, the
naive prober 0.36, the best heuristic 0.38, 7 of 12 admitted as frontier; the hard tier admits about a third (an
environment there needs a heuristic between 0.5 and 0.75 and a skill gap). Easy is one machine (Smith's rule on
verified figures is optimal); medium grants every job but the total work.

Solved exactly: on each machine Smith's rule (WSPT, ascending p_j / w_j) is optimal, so the cost of a
machine running a set T is computed for all 2^n subsets at once by a vectorised recursion over the jobs
in WSPT order; the assignment is optimised by dynamic programming over subsets,
best[k][S] = min over T subset of S of cost1(T) + best[k-1][S minus T] (all 3^n (S, T) pairs at once with
numpy). Checked against brute force over every assignment and every order on each machine in the tests.
"""

from __future__ import annotations

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
from mechanisms.params import finite, one_entry_each, positive, stickers_default_to_truth
from mechanisms.players import Knowledge, Policy, Seat
from mechanisms.prose import a, capital, figure, numbered
from mechanisms.registry import register
from schemas.envspec import Action

MAX_JOBS = 20  # on two machines the DP peels one subset of 2^n (a million at 20 jobs)
MAX_JOBS_MANY_MACHINES = 14  # on three or more it touches 3^n (set, subset) pairs: 4.8 million at 14 jobs
MAX_MACHINES = 4


class SchedulingParams(JobNumbers, BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    processing_times: list[float] = Field(min_length=1, max_length=MAX_JOBS)
    weights: list[float]
    machines: int = Field(ge=1, le=MAX_MACHINES)
    sticker_processing_times: list[float]
    sticker_weights: list[float]

    _default_sticker = stickers_default_to_truth(sticker_processing_times="processing_times", sticker_weights="weights")

    @model_validator(mode="after")
    def _shapes(self) -> SchedulingParams:
        n = len(self.processing_times)
        one_entry_each("weights", self.weights, n, "job")
        one_entry_each("sticker_processing_times", self.sticker_processing_times, n, "job")
        one_entry_each("sticker_weights", self.sticker_weights, n, "job")
        if self.machines >= 3 and n > MAX_JOBS_MANY_MACHINES:
            raise ValueError(f"processing_times: at most {MAX_JOBS_MANY_MACHINES} jobs on three or more machines, "
                             f"got {n}")
        for name in ("processing_times", "weights", "sticker_processing_times", "sticker_weights"):
            finite(name, getattr(self, name))
            positive(name, getattr(self, name))
        return self


def wspt_order(p: SchedulingParams) -> list[int]:
    """Smith's rule: 0-based job indices by ascending processing time / weight (ties by job number)."""
    return [j - 1 for j in smith(p.processing_times, p.weights, range(1, p.jobs + 1))]


def schedule_cost(p: SchedulingParams, queues: list[list[int]], unassigned: list[int]) -> float:
    """Total weighted completion time of the queues (1-based jobs) plus the charge for unassigned jobs."""
    total = 0.0
    for queue in queues:
        clock = 0.0
        for job in queue:
            clock += p.processing_times[job - 1]
            total += p.weights[job - 1] * clock
    return total + sum(p.weights[j - 1] * late_completion(p, j) for j in unassigned)


def late_completion(p: SchedulingParams, job: int) -> float:
    """The time an unassigned job (1-based) is charged at: (P - p_j) / m + p_j.

    Appending the job to the least-loaded machine, whatever the queues hold, finishes it no later: that
    machine's load is at most the average (P - p_j) / m. So a partial schedule is never charged less than a
    complete schedule that exists, and no state is worth more than the optimum.
    """
    processing = p.processing_times[job - 1]
    return (p.total_work - processing) / p.machines + processing


def _single_machine_costs(p: SchedulingParams, order: list[int]) -> np.ndarray:
    """cost1[T] for every subset T (bit b = the b-th job of the WSPT order): sum w C with T run in WSPT order.

    The job of bit b runs after every job of a lower bit, so cost1[T + 2^b] = cost1[T] + w_b (p(T) + p_b)
    for every T below 2^b: one vectorised step per job.
    """
    n = len(order)
    work = np.zeros(1 << n)
    cost = np.zeros(1 << n)
    for b, j in enumerate(order):
        low = slice(0, 1 << b)
        high = slice(1 << b, 1 << (b + 1))
        work[high] = work[low] + p.processing_times[j]
        cost[high] = cost[low] + p.weights[j] * work[high]
    return cost


@lru_cache(maxsize=2)  # at 14 jobs the pairs take about 100 MB
def _subset_pairs(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair (S, T) with T a subset of S over n bits, grouped by S: (S, T, start of each S's group)."""
    sets = np.zeros(1, dtype=np.int64)
    subs = np.zeros(1, dtype=np.int64)
    for b in range(n):
        bit = 1 << b
        sets = np.concatenate([sets, sets | bit, sets | bit])
        subs = np.concatenate([subs, subs, subs | bit])
    order = np.argsort(sets, kind="stable")
    sets, subs = sets[order], subs[order]
    starts = np.searchsorted(sets, np.arange(1 << n))
    return sets, subs, starts


def optimal_queues(p: SchedulingParams) -> tuple[list[list[int]], float, int]:
    """Optimal machine queues (1-based jobs in WSPT order), the DP's optimal cost and the pairs it examined."""
    n, m = p.jobs, p.machines
    order = wspt_order(p)
    cost1 = _single_machine_costs(p, order)
    full = (1 << n) - 1
    levels = [cost1]  # levels[k-1][S]: least cost of the jobs S on k machines
    pairs = 0
    if m >= 3:
        sets, subs, starts = _subset_pairs(n)
        for _ in range(2, m):
            values = cost1[subs] + levels[-1][sets ^ subs]
            levels.append(np.minimum.reduceat(values, starts))
            pairs += len(values)
    masks = np.arange(1 << n)
    groups: list[int] = []
    remaining = full
    for k in range(m, 1, -1):  # peel off one machine's set at a time, from the full set down
        subs_of = masks[(masks & ~remaining) == 0]
        values = cost1[subs_of] + levels[k - 2][remaining ^ subs_of]
        pairs += len(values)
        chosen = int(subs_of[int(np.argmin(values))])
        groups.append(chosen)
        remaining ^= chosen
    groups.append(remaining)
    best = float(sum(cost1[g] for g in groups))
    queues = [[order[b] + 1 for b in range(n) if g >> b & 1] for g in groups]
    return queues, best, pairs


Machine = Annotated[int, Between(1, "machines"), "machine number"]  # a machine number, 1..m
POSTED_TIME_ERROR, POSTED_WEIGHT_ERROR = 0.3, 0.3  # the posted figures' log-normal errors (sigma)


class Scheduling(JobFamily, Mechanism[SchedulingParams]):
    id = "scheduling"
    version = 5  # issue 30: canonical solver output (mechanisms.canonical); 4: issue 27, the prose is part of the spec
    group = "far_ood_probe"
    summary = ("assign jobs to identical parallel machines and order them to minimise total weighted completion "
               "time; Smith's rule per machine, dynamic programming over subsets")
    Params = SchedulingParams
    size_range = (4, MAX_JOBS)  # jobs
    horizon_range = (1, MAX_MACHINES)  # machines
    default_size = 8
    default_horizon = 2
    difficulty_grid = [(6, 2), (8, 2), (8, 3), (10, 3), (12, 4)]
    difficulty_tiers = {  # measured (see the module docstring's calibration)
        "easy": Tier(((6, 1), (8, 1), (10, 1)), 1.0),
        "medium": Tier(((10, 3), (12, 3), (10, 4)), 0.8),
        "hard": Tier(((14, 3), (12, 3)), 0.5),
        "frontier": Tier(((20, 2), (18, 2)), 0.3),
    }
    u0_band = (0.3, 0.995)
    turn_slack = 1  # tight probe budget: at the hard and frontier tiers probing every job does not fit

    def sample(self, rng: np.random.Generator, size: int, horizon: int) -> SchedulingParams:
        n, m = int(size), int(horizon)
        processing, weights = draw_jobs(rng, n)
        data = {"processing_times": processing.tolist(), "weights": weights.tolist(), "machines": m}
        return self.with_misleading_stickers(
            lambda: SchedulingParams(**data,
                                     sticker_processing_times=lognormal_posts(rng, processing, POSTED_TIME_ERROR),
                                     sticker_weights=lognormal_posts(rng, weights, POSTED_WEIGHT_ERROR)),
            lambda u0, u_star, _: -u0 >= -u_star / NEAR_OPTIMAL)

    def solve(self, params: SchedulingParams) -> Solution:
        p = params
        queues, best, pairs = optimal_queues(p)
        actions = queue_actions(queues)
        u_star = -schedule_cost(p, queues, [])  # the replayed arithmetic, so replay reproduces u* exactly
        if abs(-u_star - best) > 1e-9 * max(1.0, best):
            raise RuntimeError(f"subset DP cost {best} differs from the replayed schedule cost {-u_star}")
        facts = {"jobs": p.jobs, "machines": p.machines, "queues": queues, "subset_pairs": pairs,
                 "rule": "WSPT on every machine"}
        return Solution(u_star, actions, "Smith's rule per machine and dynamic programming over subsets", facts)

    def default_policy(self, seat: Seat) -> None:
        """Reads the posted sheet, trusts it and plays the optimal schedule of the posted figures (one bulk call per
        machine, then starts the machines); verifies nothing."""
        seat.call(SHEET)
        self.act_on_belief(seat, self.believed(seat.known))

    def initial_state(self, params: SchedulingParams) -> dict[str, Any]:
        return {"queues": [[] for _ in range(params.machines)], "history": [], "started": False, "finished": False}

    @staticmethod
    def _unassigned(p: SchedulingParams, state: dict[str, Any]) -> list[int]:
        assigned = {j for queue in state["queues"] for j in queue}
        return [j for j in range(1, p.jobs + 1) if j not in assigned]

    @staticmethod
    def _machine_of(state: dict[str, Any], job: int) -> int | None:
        for k, queue in enumerate(state["queues"]):
            if job in queue:
                return k
        return None

    def _view(self, p: SchedulingParams, state: dict[str, Any]) -> dict[str, Any]:
        return {"queues": {f"machine {k + 1}": list(q) for k, q in enumerate(state["queues"])},
                "unassigned_jobs": self._unassigned(p, state)}

    def ledger(self, params: SchedulingParams, state: dict[str, Any]) -> dict[str, Any]:
        """The run as a ledger states it: each machine's queue, the time it finishes and its weighted completion
        time, the makespan, each job's completion time, the charge for the jobs left unassigned and the total."""
        p = params
        finish, charged, completion = {}, {}, {}
        for k, queue in enumerate(state["queues"]):
            clock = cost = 0.0
            for j in queue:
                clock += p.processing_times[j - 1]
                cost += p.weights[j - 1] * clock
                completion[f"job {j}"] = clock
            finish[f"machine {k + 1}"], charged[f"machine {k + 1}"] = clock, cost
        unassigned = self._unassigned(p, state)
        return {**self._view(p, state), "machine_finish_times": finish, "makespan": max(finish.values(), default=0.0),
                "completion_times": completion, "weighted_completion_by_machine": charged,
                "unassigned_charge": sum(p.weights[j - 1] * late_completion(p, j) for j in unassigned),
                "total_weighted_completion_time": -self.utility(p, state)}

    def _take_out(self, state: State, job: int) -> dict[str, Any]:
        k = self._machine_of(state, job)
        state["queues"][k].remove(job)
        return {"machine": k + 1}

    # --- operations -------------------------------------------------------------------------
    @probe
    def probe_job(self, p: SchedulingParams, state: State, job: Job) -> Observation:
        """true processing time and weight of one job"""
        return {"job": job, "processing_time": p.processing_times[job - 1], "weight": p.weights[job - 1]}

    probe_total_work = probe_total_work  # the same probe as tardiness's (mechanisms._jobs)

    @info(decoy=True, estimates="processing_time")
    def read_posted_jobs(self, p: SchedulingParams, state: State) -> Observation:
        """the posted processing time and weight of every job: outside estimates, not the true figures"""
        return {"posted_processing_times": by_job(p.sticker_processing_times),
                "posted_weights": by_job(p.sticker_weights)}

    @info
    def list_jobs(self, p: SchedulingParams, state: State) -> Observation:
        """the job numbers, the number of machines and the jobs not yet assigned"""
        return {"jobs": list(range(1, p.jobs + 1)), "machine_count": p.machines,
                "unassigned_jobs": self._unassigned(p, state)}

    @info
    def view_schedule(self, p: SchedulingParams, state: State) -> Observation:
        """the queue of jobs on every machine"""
        return self._view(p, state)

    @decision
    def assign_jobs(self, p: SchedulingParams, state: State, jobs: Jobs, machine: Machine) -> Observation:
        """append one or more jobs, in the order given, to the end of a machine's queue"""
        for j in jobs:
            where = self._machine_of(state, j)
            if where is not None:
                raise ActionError(f"job {j} is already in the queue of machine {where + 1}")
        state["queues"][machine - 1].extend(jobs)
        state["history"].extend(jobs)
        return {"machine": machine, "appended": list(jobs), "queue": list(state["queues"][machine - 1])}

    undo_last = undo_last  # the same as tardiness's (mechanisms._jobs)

    @decision
    def remove_job(self, p: SchedulingParams, state: State, job: Job) -> Observation:
        """pull one job out of its queue (the jobs after it move up)"""
        if self._machine_of(state, job) is None:
            raise ActionError(f"job {job} is not in any queue")
        return self._removed(p, state, job)

    @decision
    def clear_machine(self, p: SchedulingParams, state: State, machine: Machine) -> Observation:
        """empty one machine's queue"""
        removed = state["queues"][machine - 1]
        state["history"] = [j for j in state["history"] if j not in removed]
        state["queues"][machine - 1] = []
        return {"machine": machine, "removed_jobs": list(removed), **self._view(p, state)}

    @clock
    def start_run(self, p: SchedulingParams, state: State) -> Observation:
        """start every machine on its queue; this ends the episode"""
        return self._end(p, state, started=True)

    @clock
    def finish(self, p: SchedulingParams, state: State) -> Observation:
        """stop now; the current queues stand"""
        return self._end(p, state)

    def utility(self, params: SchedulingParams, state: dict[str, Any]) -> float:
        return -schedule_cost(params, state["queues"], self._unassigned(params, state))

    def facts(self, params: SchedulingParams, vocab: dict[str, str]) -> list[Fact]:
        p, v = params, vocab
        rows = "; ".join(f"{j + 1}: {figure(p.processing_times[j])}, {figure(p.weights[j])}" for j in range(p.jobs))
        posted = "; ".join(f"{j + 1}: {figure(p.sticker_processing_times[j])}, {figure(p.sticker_weights[j])}"
                           for j in range(p.jobs))
        return [
            rule("structure", f"There are {p.jobs} {v['jobs']}, numbered 1 to {p.jobs}, and "
                 f"{numbered(p.machines, 'identical ' + v['machine'], 'identical ' + v['machines'])}.", p.jobs,
                 p.machines),
            rule("timing", f"Every {v['machine']} starts at time 0 and runs the {v['jobs']} of its queue one after "
                 f"another without breaks, in the order they were added: {a(v['job'])}'s completion time is the "
                 f"processing time of itself and of every {v['job']} before it on its {v['machine']}. Each "
                 f"{v['job']} has a weight: what every time unit until its completion costs, in {v['currency']}."),
            probed("jobs", "probe_job", f"The true processing time and weight of each {v['job']}, in that order: "
                   f"{rows}.", [x for j in range(p.jobs) for x in (p.processing_times[j], p.weights[j])]),
            total_work_fact(p, v),
            probed("posted_figures", SHEET, f"The {v['source']} posts these processing times and weights of "
                   f"each {v['job']}, in that order (outside estimates, not the true figures): {posted}.",
                   [*p.sticker_processing_times, *p.sticker_weights]),
            rule("left_out", f"{capital(a(v['job']))} left unassigned when the episode ends is charged as if it "
                             f"completed at "
                 f"(P - p) / {p.machines} + p, where P is the total processing time of all {v['jobs']} and p its own "
                 f"processing time: no later than it would complete if added to the least loaded {v['machine']}.",
                 p.machines),
            rule(OBJECTIVE, f"Your result is minus the total weighted completion time in {v['currency']}: the sum "
                 f"over all {v['jobs']} of weight times completion time, where an unassigned {v['job']} completes "
                 f"at (P - p) / {p.machines} + p.", p.machines),
            rule(END, f"Starting the {v['machines']} ends the episode, and so does walking away; either way the "
                 "queues as they stand count."),
            rule(BUDGET_END, f"If the turns run out before you start the {v['machines']}, the queues as they stand "
                 f"count, and every {v['job']} left unassigned is charged as an unassigned {v['job']}."),
        ]

    def public_view(self, params: SchedulingParams) -> dict[str, Any]:
        return {"jobs": params.jobs, "machines": params.machines}

    def probe_order(self, known: Knowledge) -> list[Action]:
        """Each job, the most posted weighted work (posted time times posted weight) first: a misplaced job costs
        in proportion to it; then the total work."""
        times, weights = posted(known, "posted_processing_times"), posted(known, "posted_weights")
        n = known.public["jobs"]
        work = [t * w for t, w in zip(times, weights, strict=True)] if times and weights else [0.0] * n
        return [*job_probes(sorted(range(1, n + 1), key=lambda j: (-work[j - 1], j))), Action(op="probe_total_work")]

    def believed(self, known: Knowledge) -> SchedulingParams:
        """Verified jobs are true; a job not verified has its posted time and weight (the mean verified figure, or
        10 and 5, when the sheet was not read), the times scaled so that the jobs not verified add up to the work
        not yet accounted for when the total work was probed."""
        seen = verified(known)
        times = believed_figure(known, seen, "processing_time",
                                mean_or([float(o["processing_time"]) for o in seen.values()], GUESSED_TIME))
        weights = believed_figure(known, seen, "weight",
                                  mean_or([float(o["weight"]) for o in seen.values()], GUESSED_WEIGHT))
        return SchedulingParams(processing_times=scaled_to_total(known, seen, times), weights=weights,
                                machines=known.public["machines"])

    def heuristic_policies(self) -> dict[str, Policy]:
        """Naive agents.
        - smith_dealt_posted: reads the sheet, trusts it and deals the jobs out to the machines in turn (1, 2, ...,
          m, 1, ...) in Smith's order (shortest posted time per unit of posted weight first);
        - wspt_listed: reads the sheet, times jobs on test runs in number order while the turns leave room to queue
          every machine and start, then Smith's order, each job to the least loaded machine (list scheduling), a job
          not timed as posted;
        - spt_listed: the same, then the shortest time first, each job to the least loaded machine, weights
          ignored."""

        def listed(arrange) -> Policy:
            def policy(seat: Seat) -> None:
                seat.call(SHEET)
                verify_while(seat, range(1, seat.known.public["jobs"] + 1), seat.known.public["machines"] + 1)
                seat.play(queue_actions(arrange(self.believed(seat.known))))

            return policy

        def smith_dealt_posted(seat: Seat) -> None:
            seat.call(SHEET)
            b = self.believed(seat.known)
            order = smith(b.processing_times, b.weights, range(1, b.jobs + 1))
            seat.play(queue_actions([order[k::b.machines] for k in range(b.machines)]))

        return {
            "smith_dealt_posted": smith_dealt_posted,
            "wspt_listed": listed(lambda b: list_schedule(b.machines, b.processing_times, b.weights)),
            "spt_listed": listed(lambda b: list_schedule(b.machines, b.processing_times, [1.0] * b.jobs)),
        }

    def secret_numbers(self, params: SchedulingParams) -> list[float]:
        p = params
        return [*p.processing_times, *p.weights, p.total_work]

    def public_numbers(self, params: SchedulingParams) -> list[float]:
        p = params
        return [0, p.jobs, p.machines, *range(1, max(p.jobs, p.machines) + 1)]  # 0: the time the machines start


def list_schedule(machines: int, times: list[float], weights: list[float]) -> list[list[int]]:
    """Queues (1-based jobs) by list scheduling: jobs by ascending time / weight (ties by number), each to the
    machine with the smallest load so far (ties: the lowest number), loads counted in `times`."""
    loads = [0.0] * machines
    queues: list[list[int]] = [[] for _ in range(machines)]
    for j in sorted(range(len(times)), key=lambda j: (times[j] / weights[j], j)):
        k = min(range(machines), key=lambda i: (loads[i], i))
        loads[k] += times[j]
        queues[k].append(j + 1)
    return queues


def queue_actions(queues: list[list[int]]) -> list[Action]:
    """A schedule in bulk calls: each machine's queue in one call, then start the machines."""
    actions = [Action(op="assign_jobs", args={"jobs": list(queue), "machine": k + 1})
               for k, queue in enumerate(queues) if queue]
    return [*actions, Action(op="start_run")]


register(Scheduling())
