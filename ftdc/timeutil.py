"""Time bounds given by callers, as milliseconds since the epoch (UTC)."""

from __future__ import annotations

import datetime as dt
from typing import Optional, Union

TimeArg = Union[None, int, str, dt.datetime, dt.date]


def to_ms(value: TimeArg) -> Optional[int]:
    """None, epoch milliseconds, an ISO-8601 string or a datetime; naive times are UTC."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise TypeError("a time bound cannot be a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        text = value.strip().replace("Z", "+00:00")
        try:
            value = dt.datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an ISO-8601 time: {value!r}") from None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        value = dt.datetime(value.year, value.month, value.day)
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    return int(value.timestamp() * 1000)
