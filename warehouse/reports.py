"""Named SQL queries behind `vhd report`: every number a user sees can be re-run with `vhd query`."""

from __future__ import annotations

COST_BY = """
WITH envs AS (
    SELECT {key} AS key, count(*) AS environments, sum(llm_cost_usd) AS llm_usd,
           sum(compute_seconds) AS compute_s, sum(cost_usd) AS total_usd,
           count(*) FILTER (WHERE cost_usd IS NULL) AS unknown_cost
    FROM environments GROUP BY ALL
), tries AS (
    SELECT {attempt_key} AS key, count(*) AS attempts, count(*) FILTER (WHERE admitted) AS admitted
    FROM attempts a GROUP BY ALL
), tokens AS (
    SELECT {attempt_key} AS key, sum(prompt_tokens + completion_tokens) AS tokens
    FROM llm_calls c JOIN attempts a ON a.instance_key = c.instance_key AND a.attempt = c.attempt GROUP BY ALL
)
SELECT envs.key AS {name}, environments, attempts, round(admitted / nullif(attempts, 0), 3) AS admission_yield,
       coalesce(tokens, 0) AS tokens, total_usd / environments AS usd_per_environment,
       total_usd, unknown_cost
FROM envs LEFT JOIN tries USING (key) LEFT JOIN tokens USING (key)
ORDER BY 1
"""


def _cost(name: str, key: str, attempt_key: str) -> str:
    return COST_BY.format(name=name, key=key, attempt_key=attempt_key)


REPORTS: dict[str, list[tuple[str, str]]] = {
    "cost": [
        ("cost per family", _cost("family", "family", "a.family")),
        ("cost per split", _cost("split", "split", "(SELECT split FROM environments e WHERE e.env_id = a.env_id)")),
        ("cost per setter", _cost("setter", "setter || coalesce(' / ' || model, '')",
                                  "a.setter || coalesce(' / ' || a.model, '')")),
        ("cost per domain", _cost("domain", "domain",
                                  "(SELECT domain FROM environments e WHERE e.env_id = a.env_id)")),
        ("total", """
            SELECT count(*) AS environments, (SELECT count(*) FROM attempts) AS attempts,
                   round(count(*) / nullif((SELECT count(*) FROM attempts), 0), 3) AS admission_yield,
                   (SELECT coalesce(sum(prompt_tokens + completion_tokens), 0) FROM llm_calls) AS tokens,
                   sum(cost_usd) / nullif(count(*), 0) AS usd_per_environment,
                   sum(cost_usd) AS total_usd
            FROM environments"""),
    ],
    "diversity": [
        ("family x domain coverage", """
            SELECT family, count(DISTINCT domain) AS domains, count(DISTINCT passage_id) AS passages,
                   count(DISTINCT params_hash) AS distinct_instances, count(*) AS environments,
                   count(DISTINCT title) AS distinct_titles
            FROM environments GROUP BY family ORDER BY family"""),
        ("size x horizon grid", """
            SELECT family, size, horizon, count(*) AS environments,
                   round(avg((u0 - u_idle) / nullif(u_star - u_idle, 0)), 3) AS mean_default_position
            FROM environments GROUP BY ALL ORDER BY ALL"""),
        ("per split and setter", """
            SELECT split, setter, count(*) AS environments, count(DISTINCT family) AS families,
                   count(DISTINCT domain) AS domains FROM environments GROUP BY ALL ORDER BY ALL"""),
        ("domains", """
            SELECT domain, count(*) AS environments, count(DISTINCT family) AS families
            FROM environments GROUP BY domain ORDER BY environments DESC, domain"""),
    ],
}
