-- size_summary (size): the dataset's headline size.
-- Environments admitted, families, splits and nights they span; every render attempt and the rejected ones.
SELECT (SELECT count(*) FROM environments) AS environments,
       (SELECT count(DISTINCT family) FROM environments) AS families,
       (SELECT count(DISTINCT split) FROM environments) AS splits,
       (SELECT count(DISTINCT date) FROM environments) AS nights,
       (SELECT count(*) FROM attempts) AS attempts,
       (SELECT count(*) FILTER (WHERE NOT admitted) FROM attempts) AS rejected_attempts
