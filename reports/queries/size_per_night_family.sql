-- size_per_night_family (size): environments admitted per night and family.
SELECT date AS night, family, count(*) AS environments
FROM environments
GROUP BY ALL
ORDER BY night, family
