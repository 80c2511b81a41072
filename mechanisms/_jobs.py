"""What the two job families share (scheduling: identical parallel machines; tardiness: one machine): jobs numbered
1..n with a true processing time and weight each, the argument types that name them, the total-work probe, the
record of added jobs that undo takes back, and what a player learns of the jobs from its calls (the verified jobs,
the posted sheet, the total work) and the orders in which it verifies them."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Any

import numpy as np

from mechanisms.base import ActionError
from mechanisms.facts import Fact, probed
from mechanisms.operations import Between, Observation, State, decision, probe
from mechanisms.players import Knowledge, Seat
from mechanisms.prose import figure
from schemas.envspec import Action

Job = Annotated[int, Between(1, "jobs"), "job number"]  # a job number, 1..n
# distinct job numbers, in the order to run them
Jobs = Annotated[list[int], Between(1, "jobs", max_items="jobs"), "job numbers in the order to run them"]

# what a player guesses for a job it has not verified and nothing else tells it about: a weight, a processing time
GUESSED_WEIGHT = 5.0
GUESSED_TIME = 10.0
# the posted sheet: one call shows every job's posted figures (outside estimates, not the true ones)
SHEET = "read_posted_jobs"


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


def by_job(values: Iterable[float]) -> dict[str, float]:
    """A figure per job as a sheet or a ledger shows it: {"job 1": ..., "job 2": ...}."""
    return {f"job {j}": float(x) for j, x in enumerate(values, start=1)}


class JobFamily:
    """What the job families' mechanisms share (a mixin): the state records every job added ("history") so that
    undo can take the last one back, and the episode ends with the family's ledger (the environment shows it with
    the closing call). A family defines ``_take_out(state, job)`` (take a placed job out of the schedule; what the
    reply adds), ``_view`` and ``ledger``."""

    def _end(self, p: Any, state: State, **flags: bool) -> Observation:
        """End the episode (with the flags given); the reply is the schedule as it stands (the outcome follows it)."""
        state.update(flags, finished=True)
        return {**self._view(p, state), "finished": True}

    def _removed(self, p: Any, state: State, job: int) -> Observation:
        """Take a placed job out of the schedule and of the record of additions."""
        state["history"].remove(job)
        return {"removed": job, **self._take_out(state, job), **self._view(p, state)}

    def probe_allowance(self, params: Any) -> int:
        """Every probe: each job once and the total work (the tiers grant a share of it)."""
        return params.jobs + 1

    def public_view(self, params: Any) -> dict[str, Any]:
        """The number of jobs (every mode states it)."""
        return {"jobs": params.jobs}


# --- the operations both families offer (each assigns them in its class body, where its list has them) ---
@probe
def probe_total_work(self: Any, p: JobNumbers, state: State) -> Observation:
    """true total processing time of all jobs"""
    return {"total_processing_time": p.total_work}


def total_work_fact(p: JobNumbers, v: dict[str, str]) -> Fact:
    """The fact probe_total_work reveals."""
    return probed("total_work", "probe_total_work", f"The total processing time of all {v['jobs']} is "
                  f"{figure(p.total_work)}.", [p.total_work])


@decision
def undo_last(self: Any, p: Any, state: State) -> Observation:
    """take back the most recently added job"""
    if not state["history"]:
        raise ActionError("there is no added job to undo")
    job = state["history"].pop()
    return {"undone": job, **self._take_out(state, job), **self._view(p, state)}


# --- what a player knows of the jobs (mechanisms.players) ---
def verified(known: Knowledge) -> dict[int, dict[str, Any]]:
    """The jobs a player verified (probe_job), by number: what the probe showed."""
    return {int(seen["job"]): seen for _, seen in known.observations("probe_job")}


def total_work_seen(known: Knowledge) -> float | None:
    """The total work, when the player probed it."""
    seen = known.latest("probe_total_work")
    return None if seen is None else float(seen["total_processing_time"])


def posted(known: Knowledge, key: str) -> list[float] | None:
    """One kind of figure of the posted sheet (read_posted_jobs), job by job (None when the player did not read it)."""
    seen = known.latest(SHEET)
    if seen is None:
        return None
    return [float(seen[key][f"job {j}"]) for j in range(1, known.public["jobs"] + 1)]


def believed_figure(known: Knowledge, seen: dict[int, dict[str, Any]], key: str, guess: float) -> list[float]:
    """Each job's figure as a player believes it: the verified one, else the posted one (`guess` when the sheet
    was not read)."""
    sheet = posted(known, f"posted_{key}s") or [guess] * known.public["jobs"]
    return [float(seen[j][key]) if j in seen else sheet[j - 1] for j in range(1, known.public["jobs"] + 1)]


def scaled_to_total(known: Knowledge, seen: dict[int, dict[str, Any]], times: list[float]) -> list[float]:
    """The believed processing times, those of the jobs not verified scaled so that all add up to the total work
    when the player probed it (else as they are)."""
    total, rest = total_work_seen(known), [j for j in range(1, len(times) + 1) if j not in seen]
    if total is None or not rest:
        return times
    left = total - sum(times[j - 1] for j in seen)
    scale = max(left, 1e-6) / sum(times[j - 1] for j in rest)
    return [times[j - 1] if j in seen else times[j - 1] * scale for j in range(1, len(times) + 1)]


def mean_or(values: list[float], guess: float) -> float:
    """The mean of the values, or the guess when there is none."""
    return float(np.mean(values)) if values else guess


def job_probes(jobs: Iterable[int]) -> list[Action]:
    """One probe of each job, in the order given."""
    return [Action(op="probe_job", args={"job": j}) for j in jobs]


def smith(times: list[float], weights: list[float], jobs: Iterable[int]) -> list[int]:
    """Smith's rule: the jobs (1-based) by ascending processing time per unit of weight, ties by job number."""
    return sorted(jobs, key=lambda j: (times[j - 1] / weights[j - 1], j))


def verify_while(seat: Seat, jobs: Iterable[int], reserve: int) -> None:
    """Verify the jobs in the order given while more than `reserve` turns are left (what a naive agent keeps for
    acting)."""
    for j in jobs:
        if seat.over or seat.turns_left <= reserve:
            return
        seat.call("probe_job", job=j)


def lognormal_posts(rng: np.random.Generator, truth: np.ndarray, sigma: float, low: float = 1.0) -> list[float]:
    """Posted figures: the true ones under a log-normal error (some far off), rounded, at least `low`."""
    return np.maximum(np.round(truth * np.exp(rng.normal(0.0, sigma, len(truth)))), low).tolist()
