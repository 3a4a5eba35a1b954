"""What a slow-operation row of the log is, for every stage that counts them: the completions series,
the culprits of a window and the workload of an incident read the same rows the same way."""

from __future__ import annotations

import polars as pl

# Slow operations counted once: not the per-statement WRITE lines that repeat their command's line,
# nor index builds (docs/log-format.md §4).
COUNTED = ~pl.col("write_statement").fill_null(False) & (pl.col("op_type").fill_null("") != "none")

# The operations that take a write ticket (an intent-exclusive lock); every other one takes a read ticket.
WRITES = pl.col("command").is_in(["insert", "update", "delete", "remove", "findAndModify", "findandmodify"]) | pl.col(
    "op_type"
).is_in(["insert", "update", "remove"])
