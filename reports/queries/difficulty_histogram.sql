-- difficulty_histogram (difficulty): histograms per family (bins of 0.1, clipped to [-1, 2]) of u0/u*, of the
-- default policy's position between idle and optimal, and of the idle policy's score.
WITH measured AS (
    SELECT family, 'u0 / u*' AS measure, u0 / nullif(u_star, 0) AS value FROM environments
    UNION ALL
    SELECT family, 'default position', (u0 - u_idle) / nullif(u_star - u_idle, 0) FROM environments
    UNION ALL
    SELECT family, 'idle score', greatest(0, least(1, (u_idle - u0) / nullif(u_star - u0, 0))) FROM environments)
SELECT measure, family, round(greatest(-1, least(2, floor(value * 10) / 10)), 1) AS bin, count(*) AS environments
FROM measured
WHERE value IS NOT NULL AND isfinite(value)
GROUP BY ALL
ORDER BY measure, family, bin
