"""One played episode as a row of the `evaluations` table, for a baseline agent or a litellm model."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from typing import Any

from envs.agents import AGENTS, play
from envs.environment import Environment
from evaluation.llm_agent import AgentConfig, play_llm
from schemas.envspec import EnvSpec
from schemas.errors import UserError

BASELINES = tuple(AGENTS)
LITELLM = "litellm"
AGENT_CHOICES = (*BASELINES, LITELLM)


def evaluation_id(eval_run_id: str, env_id: str, mode: str, agent: str, model: str | None, seed: int) -> str:
    """A stable id per (run, environment, mode, agent, model, seed): a retried episode replaces its row."""
    key = json.dumps([eval_run_id, env_id, mode, agent, model, seed])
    return hashlib.sha256(key.encode()).hexdigest()[:24]


def play_episode(spec: EnvSpec, mode: str, agent: str, eval_run_id: str, seed: int = 0,
                 config: AgentConfig | None = None) -> dict[str, Any]:
    """Play one episode and return its `evaluations` row (a model that kept failing is in `error`, and then the
    episode's score and u are null: avg(score) must not count it as a zero)."""
    if agent not in AGENT_CHOICES:
        raise UserError(f"unknown agent {agent!r}; choose one of {', '.join(AGENT_CHOICES)}")
    if agent == LITELLM and config is None:
        raise UserError("the litellm agent needs a model: pass --model, e.g. openai/gpt-4o-mini")
    env = Environment(spec, mode)
    started = dt.datetime.now(dt.UTC)
    model = config.model if agent == LITELLM else None
    row: dict[str, Any] = {"llm_calls": 0, "prompt_tokens": None, "completion_tokens": None, "cost_usd": None,
                           "error": None}
    if agent == LITELLM:
        usage, messages = play_llm(env, config)
        row.update(llm_calls=usage.calls, prompt_tokens=usage.prompt_tokens,
                   completion_tokens=usage.completion_tokens, cost_usd=usage.cost_usd, error=usage.error)
        trajectory = {"tool_calls": env.trajectory, "messages": messages}
    else:
        play(env, agent, seed=seed)
        row.update(prompt_tokens=0, completion_tokens=0, cost_usd=0.0)  # no model: nothing was spent, known
        trajectory = {"tool_calls": env.trajectory}
    result = env.result(agent)
    failed = row["error"] is not None  # the model kept failing: the episode has no score (null), not a zero
    row.update(evaluation_id=evaluation_id(eval_run_id, spec.env_id, mode, agent, model, seed),
               eval_run_id=eval_run_id, env_id=spec.env_id, family=spec.family, mode=mode, agent=agent,
               model=model, seed=seed, score=None if failed else result.score, u=None if failed else result.u,
               turns=result.turns,
               tool_errors=result.errors, trajectory_json=json.dumps(trajectory, default=str),
               started_at=started, finished_at=dt.datetime.now(dt.UTC))
    return row
