"""How long the command takes to start (issue 22), and what a small run pays beside its read (issue 38).

Start-up: `ftdc-analyze --version` and `--help`, and `import ftdc, analysis`, each against
`python -c "import polars"` in fresh processes, run alternately; the median of each ratio over
the rounds, with the load average. Target: `--version` at most 1.5 x importing polars.

    python -m bench.bench_startup [--rounds 15]

A small run (`--summary`): `ftdc-analyze DIR` against its floor, a fresh `python -c` that imports
`ftdc` and reads exactly the metrics the analyses read on that node (`resolve`'s `wanted`, worked
out here beforehand) and the log the summary reads beside it, if any; each on the real 7.0 sample
and the demo node, whole processes alternating, the median of each ratio over the rounds, with the
load average. Target: at most 1.5 x its floor.

    python -m bench.bench_startup --summary [--rounds 7] [--before CHECKOUT]

`--before` runs another checkout's `cli.py` (an earlier commit, its native module copied in:
`git archive COMMIT | tar -x -C CHECKOUT; cp ftdc/_native.abi3.so CHECKOUT/ftdc/`) in the same
rounds, so that a change is measured side by side with what it changed.

Every child runs with its modules' bytecode written once and read after (as an installed package
has it, compiled by pip): a `PYTHONDONTWRITEBYTECODE` in the environment would have each process
compile the project's modules again, which no user pays.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "samples"
# The nodes a small run is measured on: the real 7.0 sample (no log beside it) and the demo node (its log beside it).
NODES = {
    "7.0 sample": SHARED / "ftdc" / "mongod-7.0" / "diagnostic.data",
    "demo": ROOT / "samples" / "diagnostic.data",
}

COMMANDS = {
    "import polars": [sys.executable, "-c", "import polars"],
    "--version": [sys.executable, "-m", "cli", "--version"],
    "--help": [sys.executable, "-m", "cli", "--help"],
    "import ftdc, analysis": [sys.executable, "-c", "import ftdc, analysis"],
    "python": [sys.executable, "-c", "pass"],
}

# The floor of a summary: the metrics its analyses read, and the log it reads, nothing else.
FLOOR = """
import json, sys
import ftdc
directory, metrics, logs = sys.argv[1], json.loads(sys.argv[2]), json.loads(sys.argv[3])
ftdc.read_ftdc(directory, metrics)
if logs:
    ftdc.read_logs(logs)
"""

ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(command: list[str], cpu: list[float] | None = None) -> float:
    """Seconds `command` took; with `cpu`, the CPU seconds it used (user and system, all its threads) appended there:
    a figure a loaded machine moves far less than the time."""
    start = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENVIRONMENT)
    _, status, usage = os.wait4(child.pid, 0)
    took = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise subprocess.CalledProcessError(os.waitstatus_to_exitcode(status), command)
    if cpu is not None:
        cpu.append(usage.ru_utime + usage.ru_stime)
    return took


def alternating(
    commands: dict[str, list[str]], rounds: int
) -> tuple[dict[str, list[float]], dict[str, list[float]], list[float]]:
    """Each command's seconds and CPU seconds over `rounds` rounds, every command once a round, and the load at each
    round's start."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    loads = []
    for command in commands.values():
        timed(command)  # the page cache, and the bytecode written
    for _ in range(rounds):
        loads.append(os.getloadavg()[0])
        for name, command in commands.items():
            times[name].append(timed(command, cpu[name]))
    return times, cpu, loads


def ratio(times: dict[str, list[float]], over: str, of: str) -> float:
    return round(statistics.median(a / b for a, b in zip(times[of], times[over])), 2)


def startup(rounds: int) -> dict:
    times, _, loads = alternating(COMMANDS, rounds)
    return {
        "seconds_median": {name: round(statistics.median(t), 3) for name, t in times.items()},
        "over_import_polars_median": {name: ratio(times, "import polars", name) for name in times if name != "import polars"},
        "load_average": [round(min(loads), 1), round(max(loads), 1)],
        "rounds": rounds,
    }


def needed_metrics(directory: Path) -> list[str]:
    """The metrics an analysis of `directory` reads: its metric plan resolved on the node's own names."""
    import ftdc
    from analysis.series.metrics import resolve

    return resolve(ftdc.read_catalog(directory).schema()).wanted


def summary_commands(directory: Path, metrics_file: Path, before: Path | None) -> dict[str, list[str]]:
    """`ftdc-analyze DIR`, and its floor; with `--no-log` and its floor too where a log lies beside the node; and
    `before`'s `ftdc-analyze DIR`."""
    from ftdc.inputs import logs_beside

    logs = [str(p) for p in logs_beside([directory])]
    metrics = metrics_file.read_text()
    commands = {
        "floor": [sys.executable, "-c", FLOOR, str(directory), metrics, json.dumps(logs)],
        "ftdc-analyze DIR": [sys.executable, "-m", "cli", str(directory)],
    }
    if before is not None:
        commands["before: ftdc-analyze DIR"] = [sys.executable, str(before / "cli.py"), str(directory)]
    if logs:
        commands["floor, no log"] = [sys.executable, "-c", FLOOR, str(directory), metrics, "[]"]
        commands["ftdc-analyze DIR --no-log"] = [sys.executable, "-m", "cli", str(directory), "--no-log"]
    return commands


def summaries(rounds: int, before: Path | None) -> dict:
    figures = {}
    with tempfile.TemporaryDirectory() as scratch:
        for node, directory in NODES.items():
            metrics_file = Path(scratch) / "metrics.json"
            metrics_file.write_text(json.dumps(needed_metrics(directory)))
            commands = summary_commands(directory, metrics_file, before)
            times, cpu, loads = alternating(commands, rounds)
            figures[node] = {
                "seconds_median": {name: round(statistics.median(t), 3) for name, t in times.items()},
                "ftdc-analyze DIR / floor": ratio(times, "floor", "ftdc-analyze DIR"),
                "each round": [round(a / b, 2) for a, b in zip(times["ftdc-analyze DIR"], times["floor"])],
                "cpu_seconds_median": {name: round(statistics.median(t), 3) for name, t in cpu.items()},
                "cpu: ftdc-analyze DIR / floor": ratio(cpu, "floor", "ftdc-analyze DIR"),
                "metrics read": len(json.loads(metrics_file.read_text())),
                "load_average": [round(min(loads), 1), round(max(loads), 1)],
                "rounds": rounds,
            }
            if before is not None:
                figures[node]["before: ftdc-analyze DIR / floor"] = ratio(times, "floor", "before: ftdc-analyze DIR")
                figures[node]["cpu: before / floor"] = ratio(cpu, "floor", "before: ftdc-analyze DIR")
            if "floor, no log" in times:
                figures[node]["--no-log / floor without the log"] = ratio(times, "floor, no log", "ftdc-analyze DIR --no-log")
            print(json.dumps({node: figures[node]}), file=sys.stderr)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=None, help="alternating rounds (15 for start-up, 7 for --summary)")
    parser.add_argument("--summary", action="store_true", help="`ftdc-analyze DIR` against its floor on two nodes")
    parser.add_argument("--before", type=Path, help="with --summary: another checkout's `ftdc-analyze DIR` alongside")
    args = parser.parse_args()
    figures = summaries(args.rounds or 7, args.before) if args.summary else startup(args.rounds or 15)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
