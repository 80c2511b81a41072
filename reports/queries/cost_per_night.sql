-- cost_per_night (cost): what each night cost (its runs), its environments and its LLM tokens.
WITH spent AS (SELECT date AS night, sum(cost_usd) AS usd, sum(llm_cost_usd) AS llm_usd FROM runs GROUP BY date),
     envs AS (SELECT date AS night, count(*) AS environments FROM environments GROUP BY date),
     tokens AS (SELECT date AS night, sum(prompt_tokens + completion_tokens) AS tokens FROM llm_calls GROUP BY date)
SELECT night, coalesce(environments, 0) AS environments, usd, llm_usd,
       usd / nullif(environments, 0) AS usd_per_environment, coalesce(tokens, 0) AS tokens
FROM envs FULL JOIN spent USING (night) LEFT JOIN tokens USING (night)
ORDER BY night
