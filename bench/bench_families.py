"""Pass rates of the randomised scenario families (issue 13 §2, §3), per detector.

Draws N scenarios per detector (and N busy healthy nodes, N checkpoint stalls with
victims, N/4 idle nodes) from the strategies of samples/family_strategies.py with a
fixed seed, simulates and analyzes each, and prints, per family, how many were found
with the right window and culprit and nothing else raised (quiet families: nothing
raised, no COLLSCAN blamed). The failures are listed with the case to keep as an
explicit example in tests/test_families.py.

    python -m bench.bench_families [--examples 100] [--seed 13] [--only ttl_burst]
"""

from __future__ import annotations

import argparse
import sys
import time

from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from samples.families import KINDS, analyzed, build, build_quiet, cpu_judged, failures, restarts_judged, role_change_judged
from samples.family_strategies import (
    AT_LIMITS,
    BULK_LOADER,
    CPU_CASES,
    CPU_QUIET_CASES,
    DEFAULTS_80,
    IDLE,
    INDEX_BUILDS,
    LONG_READS,
    OTHER_PROCESS,
    OUTGROWN,
    OWN_QUEUE,
    PINNED,
    QUIET,
    RESTARTS,
    ROLE_CHANGES,
    STEADY,
    VICTIMS,
    WARM_UP,
    cases,
    shapes,
)


def family(strategy, make, examples: int, at: int, judge=None) -> tuple[int, list[tuple]]:
    """Runs `examples` draws of (shape, what) and returns how many there were and the failures (`judge(shape, what)`'s,
    where a family has its own judge, else `failures` of the scenario `make` builds)."""
    ran, failed = [], []

    @seed(at)
    @settings(
        max_examples=examples, database=None, deadline=None, phases=[Phase.generate], suppress_health_check=list(HealthCheck)
    )
    @given(case=strategy)
    def draw(case):
        ran.append(case)
        wrong = judge(*case) if judge else failures(*analyzed(make, *case))
        if wrong:
            failed.append((case, wrong))

    draw()
    return len(ran), failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        help="families to run (a detector kind, quiet, victims, own_queue, long_reads, index_builds, pinned, defaults_80, steady, at_limits, idle, bulk_loader, other_process, outgrown, warm_up, restarts, role_changes, cpu_quiet, cpu_causes)",
    )
    args = parser.parse_args()
    families = {
        **{kind: (cases(kind), build, args.examples) for kind in KINDS},
        "victims": (VICTIMS, build, args.examples),
        "own_queue": (OWN_QUEUE, build, args.examples),
        "long_reads": (LONG_READS, build, args.examples),
        "index_builds": (INDEX_BUILDS, build, args.examples),
        "pinned": (PINNED, build, args.examples),
        "defaults_80": (DEFAULTS_80, build, args.examples),
        "steady": (STEADY, build, args.examples),
        "at_limits": (AT_LIMITS, build, args.examples),
        "bulk_loader": (BULK_LOADER, build, args.examples),
        "other_process": (OTHER_PROCESS, build, args.examples),
        "outgrown": (OUTGROWN, build, args.examples),
        "warm_up": (WARM_UP, build, args.examples),
        "quiet": (st.tuples(shapes(), QUIET), build_quiet, args.examples),
        "idle": (st.tuples(shapes(), IDLE), build_quiet, max(2, args.examples // 4)),
        "cpu_quiet": (CPU_QUIET_CASES, build, args.examples),
    }
    # Families with their own judge: (strategy, judge, draws).
    judged = {
        "restarts": (RESTARTS, restarts_judged, args.examples),
        "role_changes": (ROLE_CHANGES, role_change_judged, args.examples),
        "cpu_causes": (CPU_CASES, cpu_judged, args.examples),
    }
    print("| family | drawn | passed | rate |")
    print("|---|---:|---:|---:|")
    runs = [(name, strategy, make, None, n) for name, (strategy, make, n) in families.items()]
    runs += [(name, strategy, None, judge, n) for name, (strategy, judge, n) in judged.items()]
    for name, strategy, make, judge, examples in runs:
        if args.only and name not in args.only:
            continue
        began = time.monotonic()
        ran, failed = family(strategy, make, examples, args.seed, judge)
        passed = ran - len(failed)
        print(f"| {name} | {ran} | {passed} | {passed / ran:.1%} |", flush=True)
        print(f"  ({time.monotonic() - began:.0f} s)", file=sys.stderr)
        for case, wrong in failed:
            print(f"  FAILED {case}: {wrong}", file=sys.stderr)


if __name__ == "__main__":
    main()
