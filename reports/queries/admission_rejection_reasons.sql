-- admission_rejection_reasons (admission): rejection reasons per family, numbers replaced by N so alike reasons group.
SELECT family, regexp_replace(reason, '-?[0-9]+(\.[0-9]+)?', 'N', 'g') AS reason, count(*) AS rejected_attempts
FROM attempts
WHERE NOT admitted
GROUP BY ALL
ORDER BY rejected_attempts DESC, family, reason
