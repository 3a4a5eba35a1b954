"""WiredTiger configuration strings (`wiredtiger_open` and `WT_CONNECTION::reconfigure`).

`create,cache_size=8G,eviction=(threads_min=4,threads_max=8),eviction_dirty_trigger=25`
becomes `{"create": "true", "cache_size": "8G", "eviction.threads_min": "4",
"eviction.threads_max": "8", "eviction_dirty_trigger": "25"}`. As in
WiredTiger's own parser, a key given twice keeps its last value: mongod
appends `engineConfig.configString` to its defaults so that it overrides them.
"""

from __future__ import annotations

_UNITS = {"B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def _split(text: str) -> list[str]:
    """Top-level comma-separated items; brackets and quotes protect their commas."""
    items: list[str] = []
    current: list[str] = []
    depth, quoted = 0, False
    for ch in text:
        if ch == '"':
            quoted = not quoted
        elif not quoted and ch in "([":
            depth += 1
        elif not quoted and ch in ")]":
            depth = max(0, depth - 1)
        if ch == "," and depth == 0 and not quoted:
            items.append("".join(current))
            current = []
        else:
            current.append(ch)
    items.append("".join(current))
    return [item.strip() for item in items if item.strip()]


def parse(text: str | None, prefix: str = "") -> dict[str, str]:
    """Flattened `key.subkey -> value` of a configuration string; lists stay as text."""
    out: dict[str, str] = {}
    for item in _split(text or ""):
        key, sep, value = item.partition("=")
        key, value = key.strip().strip('"'), value.strip()
        if not sep:
            out[prefix + key] = "true"
        elif value.startswith("(") and value.endswith(")"):
            out.update(parse(value[1:-1], f"{prefix}{key}."))
        else:
            out[prefix + key] = value.strip('"')
    return out


def size_bytes(value: str) -> int | None:
    """`8G`, `512MB`, `1073741824` as bytes; None when it is not a size."""
    text = value.strip().upper().removesuffix("B") or "B"
    unit = _UNITS.get(text[-1], None)
    digits = text[:-1] if unit else text
    try:
        number = float(digits)
    except ValueError:
        return None
    return int(number * (unit or 1))
