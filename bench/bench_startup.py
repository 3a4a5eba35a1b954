"""How long the command takes to start (issue 22): `ftdc-analyze --version` and `--help`,
and `import ftdc, analysis`, each against `python -c "import polars"` in fresh processes,
run alternately; the median of each ratio over the rounds, with the load average.

    python -m bench.bench_startup [--rounds 15]

Target: `--version` at most 1.5 x importing polars.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "import polars": [sys.executable, "-c", "import polars"],
    "--version": [sys.executable, "-m", "cli", "--version"],
    "--help": [sys.executable, "-m", "cli", "--help"],
    "import ftdc, analysis": [sys.executable, "-c", "import ftdc, analysis"],
    "python": [sys.executable, "-c", "pass"],
}


def timed(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    loads = []
    for command in COMMANDS.values():
        timed(command)  # warm the page cache
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name, command in COMMANDS.items():
            times[name].append(timed(command))
    polars = times["import polars"]
    print(
        json.dumps(
            {
                "seconds_median": {name: round(statistics.median(t), 3) for name, t in times.items()},
                "over_import_polars_median": {
                    name: round(statistics.median(a / b for a, b in zip(t, polars)), 2)
                    for name, t in times.items()
                    if name != "import polars"
                },
                "load_average": [round(min(loads), 1), round(max(loads), 1)],
                "rounds": args.rounds,
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
