"""The daily report: size, cost, admission, diversity and difficulty, every number from a named SQL query.

Layering: reports use warehouse (the catalog) and are used by tasks/flows and the CLI; no Prefect here.
"""
