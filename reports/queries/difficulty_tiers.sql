-- difficulty_tiers (difficulty): per family and difficulty tier (easy, medium, hard, frontier; measured from the
-- baselines, see the README), the environments, the informed agent's mean score (hidden mode's reachable ceiling),
-- the best heuristic agent's mean score and the mean share of the probe calls that fit in the budget.
WITH measured AS (
    SELECT family, coalesce(difficulty, 'unmeasured') AS tier, informed_score, heuristic_score, facts_fit
    FROM environments)
SELECT family, tier, count(*) AS environments,
       round(avg(informed_score), 4) AS mean_informed_score,
       round(avg(heuristic_score), 4) AS mean_heuristic_score,
       round(avg(facts_fit), 4) AS mean_facts_fit,
       min(CASE tier WHEN 'easy' THEN 1 WHEN 'medium' THEN 2 WHEN 'hard' THEN 3 WHEN 'frontier' THEN 4 ELSE 5 END)
           AS tier_order
FROM measured
GROUP BY family, tier
ORDER BY family, tier_order
