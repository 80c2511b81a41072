-- difficulty_tiers (difficulty): per family and difficulty tier (easy, medium, hard, frontier; measured from the
-- baselines, see the README), the environments, the informed agent's mean score (a careful hidden-mode agent's
-- reachable ceiling), the naive prober's (verifies figures in listing order), the skill gap between them, the best
-- heuristic agent's mean score and the mean share of the probe calls that fit in the budget.
WITH measured AS (
    SELECT family, coalesce(tier, 'unmeasured') AS tier, informed_score, naive_score, skill_gap,
           heuristic_score, facts_fit
    FROM environments)
SELECT family, tier, count(*) AS environments,
       round(avg(informed_score), 4) AS mean_informed_score,
       round(avg(naive_score), 4) AS mean_naive_score,
       round(avg(skill_gap), 4) AS mean_skill_gap,
       round(avg(heuristic_score), 4) AS mean_heuristic_score,
       round(avg(facts_fit), 4) AS mean_facts_fit,
       min(CASE tier WHEN 'easy' THEN 1 WHEN 'medium' THEN 2 WHEN 'hard' THEN 3 WHEN 'frontier' THEN 4 ELSE 5 END)
           AS tier_order
FROM measured
GROUP BY family, tier
ORDER BY family, tier_order
