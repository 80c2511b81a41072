-- cost_rejected_share (cost): the share of LLM dollars, tokens and attempt seconds spent on rejected attempts.
WITH calls AS (SELECT c.cost_usd, c.prompt_tokens + c.completion_tokens AS tokens, a.admitted
               FROM llm_calls c JOIN attempts a USING (run_id, instance_key, attempt))
SELECT sum(cost_usd) FILTER (WHERE NOT admitted) AS rejected_usd,
       sum(cost_usd) FILTER (WHERE NOT admitted) / nullif(sum(cost_usd), 0) AS usd_share_rejected,
       sum(tokens) FILTER (WHERE NOT admitted) / nullif(sum(tokens), 0) AS token_share_rejected,
       (SELECT sum(seconds) FILTER (WHERE NOT admitted) / nullif(sum(seconds), 0) FROM attempts)
           AS seconds_share_rejected
FROM calls
