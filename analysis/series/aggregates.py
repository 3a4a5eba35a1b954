"""Aggregates of a series typed as what the analyses take them of. polars types `min`, `max`, `median` and `mean` as
any Python value (a column may hold any type); of a numeric column they are a number, of a time column a datetime,
and None when it holds no value. The value is returned as polars gave it (an int stays an int)."""

from __future__ import annotations

import datetime as dt
from typing import cast

import polars as pl


def least(series: pl.Series) -> float | None:
    return cast("float | None", series.min())


def greatest(series: pl.Series) -> float | None:
    return cast("float | None", series.max())


def median(series: pl.Series) -> float | None:
    return cast("float | None", series.median())


def mean(series: pl.Series) -> float | None:
    return cast("float | None", series.mean())


def earliest(series: pl.Series) -> dt.datetime | None:
    return cast("dt.datetime | None", series.min())


def latest(series: pl.Series) -> dt.datetime | None:
    return cast("dt.datetime | None", series.max())


def known(value: float | None) -> float:
    """An aggregate of a series the caller knows holds a value (a window's rows of a gauge every sample records), as a
    float: None there is a mistake of the caller's, said as one rather than carried on."""
    if value is None:
        raise ValueError("an aggregate of a series that holds no value")
    return float(value)


def known_time(value: dt.datetime | None) -> dt.datetime:
    """`known` of a time column: its earliest or latest of rows the caller knows are there."""
    if value is None:
        raise ValueError("an aggregate of a series that holds no time")
    return value
