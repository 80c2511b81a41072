-- admission_rejection_checks (admission): rejected attempts per admission check (structure, completeness, C2, C3,
-- default_replay, ceiling, prose, leak, executes, ...).
SELECT split_part(reason, ':', 1) AS check_name, count(*) AS rejected_attempts,
       count(DISTINCT family) AS families
FROM attempts
WHERE NOT admitted
GROUP BY 1
ORDER BY rejected_attempts DESC, check_name
