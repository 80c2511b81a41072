-- diversity_near_duplicates (diversity): environments that repeat another one of their family: the same instance
-- (parameter hash), or the same title and tool interface (a look-alike rendering).
SELECT family, count(*) AS environments, count(*) - count(DISTINCT params_hash) AS repeated_instances,
       count(*) - count(DISTINCT title || '|' || coalesce(tool_interface, '')) AS same_title_and_interface
FROM environments
GROUP BY family
ORDER BY family
