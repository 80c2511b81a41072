-- diversity_coverage (diversity): parameter-space coverage per family: the size and horizon ranges and the
-- (size, horizon) cells reached, distinct instances, domains, passages, titles and tool interfaces.
SELECT family, count(*) AS environments, min(size) AS min_size, max(size) AS max_size, min(horizon) AS min_horizon,
       max(horizon) AS max_horizon, count(DISTINCT (size, horizon)) AS size_horizon_cells,
       count(DISTINCT params_hash) AS distinct_instances, count(DISTINCT domain) AS domains,
       count(DISTINCT passage_id) AS passages, count(DISTINCT title) AS distinct_titles,
       count(DISTINCT tool_interface) AS distinct_tool_interfaces
FROM environments
GROUP BY family
ORDER BY family
