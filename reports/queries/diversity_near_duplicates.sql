-- diversity_near_duplicates (diversity): environments that repeat another one of their family: the same instance
-- (parameter hash), or the same title and tool interface (a look-alike rendering).
WITH keyed AS (SELECT family, params_hash, title,
                      md5(CAST(list_sort(json_extract_string(spec_json, '$.rendering.tools[*].name')) AS VARCHAR))
                          AS interface
               FROM environments)
SELECT family, count(*) AS environments, count(*) - count(DISTINCT params_hash) AS repeated_instances,
       count(*) - count(DISTINCT title || '|' || coalesce(interface, '')) AS same_title_and_interface
FROM keyed
GROUP BY family
ORDER BY family
