-- size_per_night (size): environments admitted per night (the date partition), the running total, rejected attempts.
WITH envs AS (SELECT date AS night, count(*) AS environments FROM environments GROUP BY date),
     tries AS (SELECT date AS night, count(*) FILTER (WHERE NOT admitted) AS rejected_attempts
               FROM attempts GROUP BY date)
SELECT night, coalesce(environments, 0) AS environments,
       CAST(sum(coalesce(environments, 0)) OVER (ORDER BY night) AS BIGINT) AS cumulative,
       coalesce(rejected_attempts, 0) AS rejected_attempts
FROM envs FULL JOIN tries USING (night)
ORDER BY night
