-- size_per_family (size): environments per family, with its group and share of the dataset.
SELECT family, any_value(family_group) AS family_group, count(*) AS environments,
       round(count(*) / sum(count(*)) OVER (), 4) AS share
FROM environments
GROUP BY family
ORDER BY family
