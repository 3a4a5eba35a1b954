"""The native decoder against an older build of it, in one process (issue 22: nothing in the
decoder's figures may regress): both extension modules are loaded side by side and
`_native.read` of 20 metrics over bench_ftdc's 40 files runs old, new, old in each round;
the median of new / mean(old) is reported with the load average.

    python -m bench.bench_decoder_ab --old path/to/older/_native.cpython-311-x86_64-linux-gnu.so [--rounds 7]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load(path: Path):
    spec = importlib.util.spec_from_file_location("_native", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--old", type=Path, required=True)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    old, new = load(args.old), load(next((ROOT / "ftdc").glob("_native*.so")))
    files = [str(p) for p in sorted((ROOT / "bench" / "data" / "ftdc-40").glob("metrics.*"))]  # bench_ftdc builds them
    interim = [False] * len(files)
    names = [n for n in new.catalog(files, interim)["layouts"][0][0] if n != "start"]
    metrics = [names[i * len(names) // 20] for i in range(20)]

    def timed(module) -> float:
        start = time.perf_counter()
        module.read(files, interim, metrics)
        return time.perf_counter() - start

    ratios, loads = [], []
    for _ in range(args.rounds):
        loads.append(round(os.getloadavg()[0], 1))
        before, now, after = timed(old), timed(new), timed(old)
        ratios.append(now / ((before + after) / 2))
    print(
        json.dumps(
            {
                "new_over_old_median": round(statistics.median(ratios), 2),
                "new_over_old": [round(r, 2) for r in ratios],
                "load_average": loads,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
