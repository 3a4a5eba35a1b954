"""Benchmarks, run from the checkout as modules (`python -m bench.bench_ftdc`): each
compares measures side by side in one run and prints ratios (docs/benchmarks.md)."""


def megabytes(kib: float) -> float:
    """MB (10^6 bytes: the unit of the targets and of the inputs' sizes) of a count of KiB, as Linux gives VmHWM,
    ru_maxrss and `/usr/bin/time`'s %M (which it calls kB). Dividing by 1024 gave MiB, 4.9 % fewer, against targets
    in MB."""
    return kib * 1024 / 1e6
