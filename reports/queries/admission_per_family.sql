-- admission_per_family (admission): per family, sampled instances, their render attempts, the instances admitted,
-- the yield (admitted / instances) and the attempts spent per admitted environment.
WITH instances AS (SELECT family, run_id, instance_key, count(*) AS attempts, bool_or(admitted) AS admitted
                   FROM attempts GROUP BY ALL)
SELECT family, count(*) AS instances, sum(attempts) AS attempts, count(*) FILTER (WHERE admitted) AS admitted,
       round(count(*) FILTER (WHERE admitted) / count(*), 4) AS yield,
       round(sum(attempts) / nullif(count(*) FILTER (WHERE admitted), 0), 4) AS attempts_per_admitted
FROM instances
GROUP BY family
ORDER BY family
