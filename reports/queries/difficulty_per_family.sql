-- difficulty_per_family (difficulty): per family, the distribution of u0/u* (10th, 50th, 90th percentile), the
-- default policy's position between idle and optimal ((u0 - u_idle) / (u* - u_idle)), the idle policy's score
-- (clip((u_idle - u0) / (u* - u0), 0, 1)) and the optimal online policy's score (sequential families).
WITH measured AS (
    SELECT family, u0 / nullif(u_star, 0) AS u0_over_u_star,
           (u0 - u_idle) / nullif(u_star - u_idle, 0) AS default_position,
           greatest(0, least(1, (u_idle - u0) / nullif(u_star - u0, 0))) AS idle_score, online_score
    FROM environments)
SELECT family, count(*) AS environments,
       round(quantile_cont(u0_over_u_star, 0.1), 4) AS u0_over_u_star_p10,
       round(quantile_cont(u0_over_u_star, 0.5), 4) AS u0_over_u_star_median,
       round(quantile_cont(u0_over_u_star, 0.9), 4) AS u0_over_u_star_p90,
       round(avg(default_position), 4) AS mean_default_position,
       round(avg(idle_score), 4) AS mean_idle_score,
       round(avg(online_score), 4) AS mean_online_score
FROM measured
GROUP BY family
ORDER BY family
