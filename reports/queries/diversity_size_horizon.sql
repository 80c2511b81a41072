-- diversity_size_horizon (diversity): the size x horizon grid: environments per (family, size, horizon) cell.
SELECT family, size, horizon, count(*) AS environments
FROM environments
GROUP BY ALL
ORDER BY family, size, horizon
