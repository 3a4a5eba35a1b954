"""Benchmarks, run from the checkout as modules (`python -m bench.bench_ftdc`): each
compares measures side by side in one run and prints ratios (docs/benchmarks.md)."""
