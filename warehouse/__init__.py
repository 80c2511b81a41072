"""Storage and catalog: fsspec locations (local or s3://), atomic Parquet landing, commit markers, DuckDB views.

Import the modules themselves (``warehouse.catalog``, ``warehouse.landing``, ...): readers must not pay for the
writers' pandas and pandera imports.
"""
