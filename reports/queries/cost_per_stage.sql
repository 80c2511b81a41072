-- cost_per_stage (cost): LLM calls, tokens and USD per setter stage, plus the compute stage (CPU time of the runs).
SELECT stage, count(*) AS calls, coalesce(sum(prompt_tokens), 0) AS prompt_tokens,
       coalesce(sum(completion_tokens), 0) AS completion_tokens, sum(cost_usd) AS usd,
       count(*) FILTER (WHERE cost_usd IS NULL) AS unknown_cost_calls
FROM llm_calls
GROUP BY stage
UNION ALL
SELECT 'compute' AS stage, 0 AS calls, 0 AS prompt_tokens, 0 AS completion_tokens,
       sum(cost_usd - coalesce(llm_cost_usd, 0)) AS usd, 0 AS unknown_cost_calls
FROM runs
ORDER BY stage
