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


# The setter's own yield: instances the band (C2) ruled out are the sampler's, not the setter's, so they are
# left out. "Rewritten" = admitted only after the validator's reason went back to the setter.
SETTER_BY = """
WITH tries AS (
    SELECT {cols}, instance_key, count(*) AS attempts, bool_or(admitted) AS admitted,
           bool_or(admitted AND attempt = 1) AS first_try
    FROM attempts
    GROUP BY ALL
    HAVING NOT bool_or(coalesce(reason, '') LIKE 'C2:%')
), calls AS (
    SELECT {cols}, count(*) AS requests, count(*) FILTER (WHERE cache_hit) AS cached,
           count(*) FILTER (WHERE error IS NOT NULL) AS failed,
           coalesce(sum(prompt_tokens + completion_tokens) FILTER (WHERE NOT cache_hit), 0) AS tokens,
           sum(cost_usd) AS usd, count(*) FILTER (WHERE cost_usd IS NULL) AS unknown_cost
    FROM (SELECT a.run_id, a.family, a.setter, a.model, c.cache_hit, c.error, c.prompt_tokens,
                 c.completion_tokens, c.cost_usd
          FROM llm_calls c JOIN (SELECT DISTINCT run_id, family, setter, model, instance_key FROM attempts) a
               ON a.run_id = c.run_id AND a.instance_key = c.instance_key) calls_of_attempts
    GROUP BY ALL
), yields AS (
    SELECT {names}, count(*) AS instances, count(*) FILTER (WHERE admitted) AS admitted,
           round(avg(first_try::INT), 3) AS first_attempt_admission,
           round(sum(attempts) / nullif(count(*) FILTER (WHERE admitted), 0), 3) AS attempts_per_admitted,
           round(avg((attempts > 1)::INT) FILTER (WHERE admitted), 3) AS rewritten_share
    FROM tries GROUP BY ALL
)
SELECT yields.*, coalesce(requests, 0) AS requests, coalesce(cached, 0) AS cached, coalesce(failed, 0) AS failed,
       round(coalesce(tokens, 0) / nullif(admitted, 0), 1) AS tokens_per_admitted,
       usd / nullif(admitted, 0) AS usd_per_admitted, coalesce(unknown_cost, 0) AS unknown_cost
FROM yields LEFT JOIN calls USING ({names})
ORDER BY ALL
"""
SETTER_RUN_FAMILY = ("left(run_id, 8) AS run, family, setter || coalesce(' / ' || model, '') AS setter",
                     "run, family, setter")
SETTER_MODEL = ("setter || coalesce(' / ' || model, '') AS setter", "setter")


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
    "setter": [
        ("setter per run and family", SETTER_BY.format(cols=SETTER_RUN_FAMILY[0], names=SETTER_RUN_FAMILY[1])),
        ("setter per model", SETTER_BY.format(cols=SETTER_MODEL[0], names=SETTER_MODEL[1])),
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
