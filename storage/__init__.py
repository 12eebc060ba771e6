"""The Dojoflow dataset store: Parquet partitions per repository@commit, a DuckDB
catalog, LeanDojo import/export, splits, snapshots and curriculum order.

Knows nothing of Prefect or models."""
