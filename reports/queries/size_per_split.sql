-- size_per_split (size): environments per split (train, held_out, ood) and share of the dataset.
SELECT split, count(*) AS environments, count(DISTINCT family) AS families,
       round(count(*) / sum(count(*)) OVER (), 4) AS share
FROM environments
GROUP BY split
ORDER BY environments DESC, split
