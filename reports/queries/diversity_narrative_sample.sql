-- diversity_narrative_sample (diversity): the texts the narrative measures run over (n-grams and embedding
-- dispersion, computed in Python): a deterministic sample of up to 2,000 environments (smallest md5 of env_id),
-- each with its title and the story paragraph of its written prompt.
SELECT env_id, family, title, coalesce(story, '') AS story
FROM environments
ORDER BY md5(env_id)
LIMIT 2000
