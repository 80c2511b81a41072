-- cost_next_night_total (cost): the next night's projected environments and USD at the current mix (sum of
-- cost_next_night over families).
WITH last AS (SELECT max(date) AS night FROM environments),
     mix AS (SELECT family, count(*) AS environments FROM environments
             WHERE date = (SELECT night FROM last) GROUP BY family),
     unit AS (SELECT family, avg(cost_usd) AS usd_per_environment FROM environments GROUP BY family)
SELECT (SELECT night FROM last) AS mix_of_night, sum(environments) AS next_night_environments,
       sum(environments * usd_per_environment) AS projected_usd
FROM mix LEFT JOIN unit USING (family)
