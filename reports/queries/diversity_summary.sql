-- diversity_summary (diversity): distinct instances (canonical parameter hashes), tool interfaces (the sorted
-- tool names an agent sees), titles, passages and domains over all environments.
SELECT count(*) AS environments, count(DISTINCT params_hash) AS distinct_instances,
       count(DISTINCT tool_interface) AS distinct_tool_interfaces,
       count(DISTINCT title) AS distinct_titles, count(DISTINCT passage_id) AS passages,
       count(DISTINCT domain) AS domains
FROM environments
