"""Named SQL over `evaluations`: a run's mean score per family and mode, and the paper's mode comparison."""

from __future__ import annotations

from schemas.envspec import MODES

_BY_MODE = ", ".join(f"round(avg(score) FILTER (WHERE mode = '{m}' AND error IS NULL), 3) AS {m}" for m in MODES)
# cost stays null when any episode's cost is unknown: a partial sum would read as a real total
_USD = "CASE WHEN count(cost_usd) = count(*) THEN round(sum(cost_usd), 6) END AS usd"


def run_summary_sql(eval_run_id: str) -> str:
    """Mean score per family and mode of one eval run (episodes whose model kept failing are counted apart)."""
    run = eval_run_id.replace("'", "''")
    return ("SELECT family, mode, count(*) AS episodes, round(avg(score) FILTER (WHERE error IS NULL), 4) AS "
            "mean_score, count(error) AS failed, round(avg(turns), 1) AS turns, "
            f"sum(prompt_tokens) + sum(completion_tokens) AS tokens, {_USD} FROM evaluations "
            f"WHERE eval_run_id = '{run}' GROUP BY ALL ORDER BY ALL")


REPORT = [
    ("mean score by presentation mode, per family and agent (episodes without model errors)",
     f"SELECT family, coalesce(model, agent) AS agent, {_BY_MODE}, "
     "round(avg(score) FILTER (WHERE mode = 'hidden' AND error IS NULL) - avg(score) FILTER "
     "(WHERE mode = 'revealed' AND error IS NULL), 3) AS hidden_minus_revealed, count(*) AS episodes, "
     "count(error) AS failed FROM evaluations GROUP BY ALL ORDER BY agent, family"),
    ("per agent and mode: episodes, mean score, turns, tokens and USD",
     "SELECT coalesce(model, agent) AS agent, mode, count(*) AS episodes, "
     "round(avg(score) FILTER (WHERE error IS NULL), 4) AS mean_score, count(error) AS failed, "
     "round(avg(turns), 1) AS turns, sum(prompt_tokens) + sum(completion_tokens) AS tokens, "
     f"{_USD} FROM evaluations GROUP BY ALL ORDER BY agent, mode"),
]
