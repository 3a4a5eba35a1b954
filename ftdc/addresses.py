"""Nodes that share an address (`host:port`): one node's captures, or several nodes.

A node's key is its address, and one address does not make one node: a demo and a test rig
on `localhost:27017`, a host name reused across environments. Two captures under one address
are one node's when they say the same of themselves (replica set and host: OS, cores,
memory) and either share an FTDC file (mongod names each by the second it opened it: copies
of one capture) or have samples that do not overlap in time (one node records each second
once). Otherwise they are two nodes: the first met keeps the address's key, the other
gets `<key>-same-address-<digest>`, which says so, and a warning names both.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .errors import FTDCWarning

IDENTITY = ("replica_set", "os", "cpus", "memory_mb")


@dataclass(frozen=True)
class Capture:
    """What tells one node from another under one address."""

    key: str
    address: str | None
    identity: tuple
    first: dt.datetime | None
    last: dt.datetime | None
    files: frozenset[str]  # FTDC archive file names (metrics.interim, in every capture, left out)
    source: str


def _why_apart(a: Capture, b: Capture) -> str | None:
    """Why `a` and `b` are two nodes; None when they can be one node's captures."""
    differ = [name.replace("_", " ") for name, x, y in zip(IDENTITY, a.identity, b.identity) if x != y]
    if differ:
        return f"{', '.join(differ)} differ"
    if a.files & b.files:
        return None
    if a.first is None or a.last is None or b.first is None or b.last is None:
        return None
    if a.first <= b.last and b.first <= a.last:
        return "their samples overlap in time"
    return None


def _digest(c: Capture) -> str:
    text = "|".join([*sorted(c.files), repr(c.identity), str(c.first)])
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def keys_apart(captures: Sequence[Capture], known: Sequence[Capture] = ()) -> list[str]:
    """The key of each capture: its own (the address's), the key of an earlier capture of the
    same node (`known` ones, already in a dataset, first), or a key of its own when another
    node has the address's; each such capture is named in a warning."""
    taken: dict[str, list[Capture]] = defaultdict(list)
    for c in known:
        taken[c.key.split("-same-address-")[0]].append(c)
    keys = []
    for c in captures:
        earlier = taken[c.key] if c.address else []
        by_key: dict[str, list[Capture]] = defaultdict(list)
        for e in earlier:
            by_key[e.key].append(e)
        # One node's captures: this one must fit every capture already under the key.
        reasons = {
            key: next((why for e in nodes if (why := _why_apart(e, c)) is not None), None) for key, nodes in by_key.items()
        }
        same = next((key for key, why in reasons.items() if why is None), None)
        key = c.key if not earlier else same if same is not None else f"{c.key}-same-address-{_digest(c)}"
        if earlier and same is None:
            warnings.warn(
                f"{c.source}: another node at {c.address} than {earlier[0].source} ({reasons[earlier[0].key]}): kept apart as {key}",
                FTDCWarning,
                stacklevel=3,
            )
        taken[c.key].append(replace(c, key=key))
        keys.append(key)
    return keys
