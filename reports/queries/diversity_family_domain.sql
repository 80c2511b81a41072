-- diversity_family_domain (diversity): family x domain coverage: environments per (family, domain).
SELECT family, domain, count(*) AS environments
FROM environments
GROUP BY ALL
ORDER BY family, domain
