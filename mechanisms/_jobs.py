"""What the two job families share (scheduling: identical parallel machines; tardiness: one machine): jobs numbered
1..n with a true processing time and weight each, the argument types that name them, the total-work probe, the
record of added jobs that undo takes back, and the probing plans and beliefs built on one probe per job."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from mechanisms.base import ActionError
from mechanisms.facts import Fact, probed
from mechanisms.operations import Between, Observation, State, decision, probe
from schemas.envspec import Action

Job = Annotated[int, Between(1, "jobs"), "job number"]  # a job number, 1..n
# distinct job numbers, in the order to run them
Jobs = Annotated[list[int], Between(1, "jobs", max_items="jobs"), "job numbers in the order to run them"]


def draw_jobs(rng: np.random.Generator, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The samplers' jobs: processing times 1..20 and weights 1..10, uniform integers (as floats), in that order."""
    processing = rng.integers(1, 21, n).astype(float)
    return processing, rng.integers(1, 11, n).astype(float)


class JobNumbers:
    """The job families' parameters (a mixin of their models): n jobs numbered 1..n, and all their work."""

    processing_times: list[float]

    @property
    def jobs(self) -> int:
        return len(self.processing_times)

    @property
    def total_work(self) -> float:
        return float(sum(self.processing_times))


class JobFamily:
    """What the job families' mechanisms share (a mixin): the state records every job added ("history") so that
    undo can take the last one back, and the episode ends with the family's ledger. A family defines
    ``_take_out(state, job)`` (take a placed job out of the schedule; what the reply adds), ``_view`` and
    ``_ledger``."""

    def _end(self, p: Any, state: State, **flags: bool) -> Observation:
        """End the episode (with the flags given); the reply is the ledger."""
        state.update(flags, finished=True)
        return {**self._ledger(p, state), "finished": True}

    def _removed(self, p: Any, state: State, job: int) -> Observation:
        """Take a placed job out of the schedule and of the record of additions."""
        state["history"].remove(job)
        return {"removed": job, **self._take_out(state, job), **self._view(p, state)}

    def probe_allowance(self, params: Any) -> int:
        """Every probe: each job once and the total work (the tiers grant a share of it)."""
        return params.jobs + 1


# --- the operations both families offer (each assigns them in its class body, where its list has them) ---
@probe
def probe_total_work(self: Any, p: JobNumbers, state: State) -> Observation:
    """true total processing time of all jobs"""
    return {"total_processing_time": p.total_work}


def total_work_fact(p: JobNumbers, v: dict[str, str]) -> Fact:
    """The fact probe_total_work reveals."""
    return probed("total_work", "probe_total_work", f"The total processing time of all {v['jobs']} is "
                  f"{p.total_work:g}.", [p.total_work])


@decision
def undo_last(self: Any, p: Any, state: State) -> Observation:
    """take back the most recently added job"""
    if not state["history"]:
        raise ActionError("there is no added job to undo")
    job = state["history"].pop()
    return {"undone": job, **self._take_out(state, job), **self._view(p, state)}


# --- probing plans and beliefs ---
def smith(p: Any, jobs: Iterable[int]) -> list[int]:
    """Smith's rule: the jobs (1-based) by ascending processing time per unit of weight, ties by job number."""
    return sorted(jobs, key=lambda j: (p.processing_times[j - 1] / p.weights[j - 1], j))


def job_probes(jobs: Iterable[int]) -> list[Action]:
    """One probe of each job, in the order given."""
    return [Action(op="probe_job", args={"job": j}) for j in jobs]


def probe_plan(order: Iterable[int]) -> list[Action]:
    """The total work first (it scales what the posted figures say of the jobs not probed), then each job."""
    return [Action(op="probe_total_work"), *job_probes(order)]


@dataclass(frozen=True)
class Survey:
    """What probe calls revealed: the jobs probed (ascending), the others, the mean weight of the probed ones (5 when
    none is) and, when the total work was probed and a job was not, the work the probed jobs leave to the rest."""

    known: list[int]
    rest: list[int]
    weight: float
    left: float | None

    def pick(self, truth: list[float], guess: list[float]) -> list[float]:
        return pick(self.known, truth, guess)


def pick(known: Iterable[int], truth: list[float], guess: list[float]) -> list[float]:
    """Each job's figure: the truth where the job is known (probed), the guess elsewhere."""
    known = set(known)
    return [truth[j - 1] if j in known else guess[j - 1] for j in range(1, len(truth) + 1)]


def survey(p: Any, probed: list[Action]) -> Survey:
    known = sorted({a.args["job"] for a in probed if a.op == "probe_job"})
    rest = [j for j in range(1, p.jobs + 1) if j not in known]
    weight = float(np.mean([p.weights[j - 1] for j in known])) if known else 5.0
    left = None
    if rest and any(a.op == "probe_total_work" for a in probed):
        left = p.total_work - sum(p.processing_times[j - 1] for j in known)
    return Survey(known, rest, weight, left)
