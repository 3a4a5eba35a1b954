"""ftdc-analyze: MongoDB FTDC files and mongod logs as polars frames."""

from .errors import FTDCError, FTDCWarning
from .reader import read_ftdc

__all__ = ["FTDCError", "FTDCWarning", "read_ftdc"]
