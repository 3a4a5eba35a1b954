"""A `Recommendation` in words and as JSON: the one place advice becomes text.

A change of setting reads `what: label current (source) → proposed (where to set it)`,
then why, then any caveat; other advice reads its words, then the command that applies it.
"""

from __future__ import annotations

from typing import Any

from analysis.advice.recommendation import Current, Recommendation, Withheld
from analysis.settings import SETTINGS

ASSUMED = "assumed: these files do not record the node's configuration"
# Fixes a report shows as they come, the first first: a handful; the rest are folded (every format says how many).
HANDFUL = 5


def handful(recommendations: list[Recommendation]) -> tuple[list[Recommendation], list[Recommendation]]:
    """The fixes shown, and those folded after them."""
    return recommendations[:HANDFUL], recommendations[HANDFUL:]


def amount(value: float | None, unit: str) -> str:
    """A setting's value in its unit: `20 %`, `60 s`, `4`, `2.0 GB`; `not set` for none."""
    if value is None:
        return "not set"
    if unit == "bytes" or (unit == "%" and value > 100):  # eviction percentages above 100 are bytes
        return f"{value / 2**30:.1f} GB"
    return f"{value:g}" + (f" {unit}" if unit in ("%", "s") else "")


def _setting_value(name: str, value: float) -> str:
    """The value as the setting is written where it is set (the cache in GB)."""
    return f"{value / 2**30:g}" if SETTINGS[name].label == "cacheSizeGB" else f"{value:g}"


def current_words(current: Current) -> str:
    extra = f", {ASSUMED}" if current.origin == "assumed" else ""
    return f"{amount(current.value, current.unit)} ({current.source}{extra})"


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def text(rec: Recommendation) -> str:
    if (change := rec.setting_change) is not None:
        setting, current, proposed = change
        meaning = SETTINGS[setting]
        how = meaning.how.replace("{value}", _setting_value(setting, proposed))
        # The current value once, with its source; the proposed one with where to set it.
        body = f"{rec.what}: {meaning.label} {current_words(current)} → {amount(proposed, current.unit)} ({how})"
    elif rec.command:
        body = f"{rec.what}: {rec.command}"
    else:
        body = rec.what
    if rec.why:
        body += f". {_sentence(rec.why)}"
    if rec.caveat:
        body += f". Caveat: {rec.caveat}"
    return body


def as_dict(rec: Recommendation) -> dict[str, Any]:
    """JSON and table rows: the words with the structure they come from."""
    current = (
        None
        if rec.current is None
        else {"value": rec.current.value, "unit": rec.current.unit, "source": rec.current.source, "origin": rec.current.origin}
    )
    return {
        "text": text(rec),
        "action": rec.action,
        "what": rec.what,
        "setting": rec.setting,
        "current": current,
        "proposed": rec.proposed,
        "why": rec.why or None,
        "target": rec.target,
        "operation": rec.operation,
        "command": rec.command,
        "caveat": rec.caveat,
        "findings": list(rec.findings),
    }


def withheld_dict(item: Withheld) -> dict[str, Any]:
    return {"advice": as_dict(item.recommendation), "reason": item.reason}
