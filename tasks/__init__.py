"""Prefect tasks: one pipeline stage per file, each over a shard. The plain stage functions need no Prefect."""
