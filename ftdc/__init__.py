"""ftdc-analyze: MongoDB FTDC files and mongod logs as polars frames."""
