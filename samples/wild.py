"""Nodes from the wild (issue 18 §5), simulated: what a corpus of real captures showed, rebuilt with the
simulator so each case is a regression test (tests/test_explanations.py).

- `restart_loop`: a node restarting over and over, each process living minutes (a crash loop).
- `restart_dip`: one restart after which the work comes back slowly: the dip that begins there is the restart's.
- `clients_leave`: a development machine whose application leaks connections; it closes them, and the
  operations it sent go with them (no queue, no latency rise; the machine misses an FTDC sample).
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from samples.families import T0, Baseline, Scenario, Shape, node_log
from samples.simulate import Tick, write_ftdc


def _write(
    shape: Shape, out: Path, seconds: int, plan: Callable[[int], Tick], restarts: dict[int, int] | None = None
) -> Scenario:
    config = shape.config()
    run = write_ftdc(out / "diagnostic.data", config, T0, seconds, plan, period=shape.period_s, restarts=restarts)
    log = node_log(shape, config, run)
    log.write(out / "mongod.log")
    return Scenario(out / "diagnostic.data", out / "mongod.log")


def restart_loop(shape: Shape, out: Path, hours: float = 2.0) -> Scenario:
    """After an hour of normal work, mongod dies every 150-300 s and is started again 5-30 s later."""
    rng = random.Random(shape.seed + 5)
    base = Baseline(shape)
    seconds = int(3600 + hours * 3600)
    down, restarts, s = set(), {}, 3600
    while s < seconds - 600:
        s += rng.randint(150, 300)
        gone = rng.randint(5, 30)
        down.update(range(s, s + gone))
        restarts[s + gone] = shape.config().pid + len(restarts) + 1
        s += gone
    return _write(shape, out, seconds, lambda t: replace(base(t), missing=t in down), restarts)


def restart_dip(shape: Shape, out: Path) -> tuple[Scenario, dt.datetime]:
    """One restart after 40 minutes; the clients come back over two minutes to a cold cache (reads from disk, slow).
    Returns the scenario and when the new process's first sample was taken."""
    base = Baseline(shape)
    down, back = 2400, 2420

    def plan(t: int) -> Tick:
        tick = replace(base(t), missing=down <= t < back)
        if back <= t < back + 120:
            share = 0.05 + 0.95 * (t - back) / 120
            tick = replace(
                tick,
                reads=tick.reads * share,
                writes=tick.writes * share,
                commands=tick.commands * share,
                read_latency_us=tick.read_latency_us * 20,
                cache_fill=0.05 + 0.75 * (t - back) / 120,
            )
        return tick

    return _write(shape, out, 3600, plan, {back: shape.config().pid + 1}), T0 + dt.timedelta(seconds=back)


def clients_leave(shape: Shape, out: Path) -> Scenario:
    """An application that leaks connections: 183 open, climbing to 2,008 over 40 minutes at 399 operations/s; then
    it closes them within seconds and sends 25 operations/s, nearly all heartbeat commands. The machine misses
    an FTDC sample as they go (a laptop's FTDC thread not scheduled). Nothing queued, nothing slower."""
    rng = random.Random(shape.seed + 7)
    base = Baseline(shape)
    leak_end, seconds = 3000, 3900

    def plan(t: int) -> Tick:
        tick = replace(base(t), read_out=0, write_out=0)
        if t < leak_end:
            open_ = 183 + int(1825 * min(1.0, t / 2400))
            return replace(
                tick,
                reads=260 * rng.uniform(0.95, 1.05),
                writes=90 * rng.uniform(0.95, 1.05),
                commands=49,
                connections=open_,
                connections_created=open_ / 2400 + 0.76,
            )
        return replace(
            tick,
            reads=2 * rng.uniform(0.5, 1.5),
            writes=1 * rng.uniform(0.5, 1.5),
            commands=22,
            connections=183,
            connections_created=0.1,
            missing=t in (leak_end + 2, leak_end + 3, leak_end + 4, leak_end + 5),
        )

    return _write(shape, out, seconds, plan)


def windows_node(shape: Shape, out: Path) -> Scenario:
    """An hour of ordinary work on a Windows host, whose systemMetrics hold PhysicalDisk counters."""
    base = Baseline(shape)
    config = replace(shape.config(), windows=True)
    run = write_ftdc(out / "diagnostic.data", config, T0, 3600, base, period=shape.period_s)
    node_log(shape, config, run).write(out / "mongod.log")
    return Scenario(out / "diagnostic.data", out / "mongod.log")
