"""How surprising a count of coincidences is."""

from __future__ import annotations

import numpy as np


def at_least(probabilities: list[float], k: int) -> float:
    """P(at least k successes) among independent trials with the given success
    probabilities (the Poisson-binomial tail), by dynamic programming."""
    if k <= 0:
        return 1.0
    if k > len(probabilities):
        return 0.0
    dist = np.zeros(len(probabilities) + 1)
    dist[0] = 1.0
    for n, p in enumerate(probabilities, 1):
        p = min(max(p, 0.0), 1.0)
        dist[1 : n + 1] = dist[1 : n + 1] * (1 - p) + dist[:n] * p
        dist[0] *= 1 - p
    return float(min(1.0, dist[k:].sum()))
