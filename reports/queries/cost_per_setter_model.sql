-- cost_per_setter_model (cost): cost per setter and model (template, or litellm / <model>).
WITH envs AS (SELECT setter || coalesce(' / ' || model, '') AS setter_model, count(*) AS environments,
                     sum(cost_usd) AS usd
              FROM environments GROUP BY 1),
     tokens AS (SELECT a.setter || coalesce(' / ' || a.model, '') AS setter_model,
                       sum(c.prompt_tokens + c.completion_tokens) AS tokens, count(*) AS llm_calls
                FROM llm_calls c JOIN attempts a USING (run_id, instance_key, attempt) GROUP BY 1)
SELECT setter_model, environments, usd, usd / environments AS usd_per_environment,
       coalesce(llm_calls, 0) AS llm_calls, coalesce(tokens, 0) AS tokens
FROM envs LEFT JOIN tokens USING (setter_model)
ORDER BY setter_model
