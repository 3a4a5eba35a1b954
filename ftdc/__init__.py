"""ftdc-analyze: MongoDB FTDC files and mongod logs as polars frames.

Pipeline: `paths` (which files) -> native `catalog`/`read` (documents,
chunks, int64 columns) -> `frames` (polars) -> `reader`/`scan`/`export`/
`metadata` (the public readers).
"""

from .catalog import list_metrics, read_catalog
from .errors import FTDCError, FTDCWarning
from .export import to_csv, to_parquet
from .metadata import Metadata, NodeInfo, read_metadata
from .reader import read_ftdc
from .scan import scan_ftdc

__all__ = [
    "FTDCError",
    "FTDCWarning",
    "Metadata",
    "NodeInfo",
    "list_metrics",
    "read_catalog",
    "read_ftdc",
    "read_metadata",
    "scan_ftdc",
    "to_csv",
    "to_parquet",
]
