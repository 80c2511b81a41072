-- cost_summary (cost): what was spent in all (runs: rejected instances included) and per admitted environment.
-- total_usd is every run's cost (LLM calls + compute); environments_usd is what landed environments carry
-- (their own failed attempts included); tokens count every LLM call.
WITH spent AS (SELECT sum(cost_usd) AS total_usd, sum(llm_cost_usd) AS llm_usd, sum(compute_seconds) AS compute_seconds
               FROM runs),
     envs AS (SELECT count(*) AS environments, sum(cost_usd) AS environments_usd,
                     count(*) FILTER (WHERE cost_usd IS NULL) AS unknown_cost_environments FROM environments),
     tokens AS (SELECT coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
                       coalesce(sum(completion_tokens), 0) AS completion_tokens, count(*) AS llm_calls FROM llm_calls)
SELECT environments, total_usd, total_usd / nullif(environments, 0) AS usd_per_environment, environments_usd,
       llm_usd, compute_seconds, llm_calls, prompt_tokens, completion_tokens,
       prompt_tokens + completion_tokens AS tokens, unknown_cost_environments
FROM spent, envs, tokens
