-- cost_per_family (cost): cost of the admitted environments per family, and the tokens of the family's LLM calls.
WITH envs AS (SELECT family, count(*) AS environments, sum(cost_usd) AS usd, sum(llm_cost_usd) AS llm_usd,
                     sum(compute_seconds) AS compute_seconds
              FROM environments GROUP BY family),
     tokens AS (SELECT a.family, sum(c.prompt_tokens + c.completion_tokens) AS tokens
                FROM llm_calls c JOIN attempts a USING (run_id, instance_key, attempt) GROUP BY a.family)
SELECT family, environments, usd, usd / environments AS usd_per_environment, llm_usd, compute_seconds,
       coalesce(tokens, 0) AS tokens
FROM envs LEFT JOIN tokens USING (family)
ORDER BY family
