-- cost_next_night (cost): the projected cost of the next night at the current mix: the last night's
-- environments per family times the family's mean cost per environment over the selection.
WITH last AS (SELECT max(date) AS night FROM environments),
     mix AS (SELECT family, count(*) AS environments FROM environments
             WHERE date = (SELECT night FROM last) GROUP BY family),
     unit AS (SELECT family, avg(cost_usd) AS usd_per_environment FROM environments GROUP BY family)
SELECT family, environments AS next_night_environments, usd_per_environment,
       environments * usd_per_environment AS projected_usd
FROM mix LEFT JOIN unit USING (family)
ORDER BY family
