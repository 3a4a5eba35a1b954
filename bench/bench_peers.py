"""Our FTDC decoder and log reader against public peers, as whole processes side by side.

The peers are built from their public sources outside this repository (docs/benchmarks.md,
"Peers", says from which commits and what each program does); this script only runs them.
Give each one's path by flag or environment variable; a peer that is not given, or not
there, is skipped with the reason printed:

  FTDC (a driver program of the peer's library: decode every metrics.* file of a directory and
  keep the values of every metric, or of the metrics named in a file, one a line, to the end,
  as a reader's caller holds them; print how many it read)
    --go-mongodb-ftdc      FTDC_PEER_GO_MONGODB_FTDC    github.com/mongodb/ftdc (Go)
    --go-simagix-ftdc      FTDC_PEER_GO_SIMAGIX_FTDC    github.com/simagix/mongo-ftdc/decoder (Go)
    --rust-benvenuto-ftdc  FTDC_PEER_RUST_BENVENUTO_FTDC  markbenvenuto/ftdc, crate ftdc (Rust)
  logs (the peer's own command)
    --mdbkit               FTDC_PEER_MDBKIT      `mdbkit queries LOG` (JSON logs)
    --hatchet              FTDC_PEER_HATCHET     `hatchet -url DB LOG`: every line into SQLite (JSON logs)
    --mloginfo             FTDC_PEER_MLOGINFO    `mloginfo --queries --no-progressbar LOG` (text logs)

Ours, the same way as whole processes of this checkout's interpreter:
  FTDC  read_ftdc(directory[, names]) into one frame (every value kept, not only counted)
  logs  `ftdc-analyze logs LOG` (python cli.py logs LOG: read, slow-operation tables printed)

Inputs, built once under bench/data/ by the other benchmarks' builders:
  analyze-<days>d/diagnostic.data   bench_analyze.build_ftdc: one node at 1 s, real 7.0 layout
  mongod-6.0.11-<gb>GB.log          bench_logs.build_log: the 6.0.11 sample's JSON lines repeated
  legacy-text-<mb>MB.log            the real 4.0 / 4.2 text-log samples repeated (mloginfo reads
                                    no JSON log, and mdbkit and Hatchet no text log)
Workloads: every metric of --all-days, the 100 metrics of names_for() over each --some-days,
each JSON log of --log-gb, the text log of --text-mb. Each round runs every program once on one
input, the order rotated each round; wall time by the clock around the process, peak RSS by
/usr/bin/time's %M (its fork is small, so the figure is the program's own). Medians over the
rounds, ratios peer / ours of the medians and per round, and the load average printed beside.
Each program's count of what it read is printed, so comparable work can be checked.

    python -m bench.bench_peers --rounds 3 --all-days 1 --some-days 3 --log-gb 0.25 1 --text-mb 20 \\
        --go-mongodb-ftdc PATH --go-simagix-ftdc PATH ... (or the FTDC_PEER_* variables)
"""

from __future__ import annotations

import argparse
import os
import pty
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench import megabytes

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "bench" / "data"
TEXT_SAMPLES = ROOT.parent / "shared" / "samples" / "logs" / "legacy-text"
# Real 4.0 and 4.2 text logs with slow operations (mloginfo's --queries section reads them).
TEXT_SOURCES = (
    "mongod_4.2.11.log",
    "mongod_4.0.10_slowoplogs.log",
    "mongod_4.0.10_slowtransactions.log",
    "mongod_4.0.10_slowdns.log",
    "collscans.log",
)
METRIC_COUNT = 100

FTDC_PEERS = ("go-mongodb-ftdc", "go-simagix-ftdc", "rust-benvenuto-ftdc")
JSON_LOG_PEERS = ("mdbkit", "hatchet")
TEXT_LOG_PEERS = ("mloginfo",)

OURS_FTDC = (
    "import sys, ftdc;"
    "names = open(sys.argv[2]).read().split(chr(10)) if len(sys.argv) > 2 else None;"
    "frame = ftdc.read_ftdc(sys.argv[1], [n for n in names if n] if names else None);"
    "print(f'rows={frame.height} metrics={frame.width - 1} values={frame.height * (frame.width - 1)}')"
)


@dataclass(frozen=True)
class Run:
    seconds: float
    peak_mb: float
    summary: str


@dataclass(frozen=True)
class Program:
    name: str
    command: tuple[str, ...]
    # mloginfo reads stdin unless stdin is a terminal: it is given a pseudo-terminal.
    needs_tty: bool = False
    # Hatchet adds to the SQLite file it is given: each run starts without it.
    fresh_file: Path | None = None


def run(program: Program, cwd: Path) -> Run:
    if program.fresh_file is not None:
        for stale in program.fresh_file.parent.glob(program.fresh_file.name + "*"):
            stale.unlink()
    with tempfile.NamedTemporaryFile("r", suffix=".time") as timing:
        terminal = pty.openpty() if program.needs_tty else None
        start = time.perf_counter()
        done = subprocess.run(
            ["/usr/bin/time", "-f", "%M", "-o", timing.name, *program.command],
            cwd=cwd,
            stdin=terminal[1] if terminal else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        seconds = time.perf_counter() - start
        if terminal:
            os.close(terminal[0])
            os.close(terminal[1])
        peak_kb = int(timing.read().split()[-1])
    if done.returncode != 0:
        raise SystemExit(f"{program.name} failed ({done.returncode}): {done.stderr[-2000:]}")
    return Run(seconds, megabytes(peak_kb), summarise(program.name, done.stdout + done.stderr))


_COUNTS = re.compile(r"\b(?:files|chunks|rows|metrics|metrics_matched|values)=\d+")


def summarise(name: str, output: str) -> str:
    """What the program says it read: the drivers' counts, or the first lines naming a count."""
    counts = _COUNTS.findall(output)
    if counts:
        return " ".join(counts)
    lines = [line.strip() for line in output.splitlines() if re.search(r"\d", line)]
    return " | ".join(lines[:2])[:160]


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def compare(title: str, programs: list[Program], rounds: int, cwd: Path) -> None:
    print(f"\n== {title} (load before {load()})", flush=True)
    runs: dict[str, list[Run]] = {p.name: [] for p in programs}
    for r in range(rounds):
        order = programs[r % len(programs) :] + programs[: r % len(programs)]
        for program in order:
            runs[program.name].append(run(program, cwd))
        print(
            f"  round {r + 1}: "
            + ", ".join(f"{p.name} {runs[p.name][-1].seconds:.2f} s" for p in programs)
            + f" (load {load()})",
            flush=True,
        )
    ours = runs[programs[0].name]
    ours_s = statistics.median(x.seconds for x in ours)
    ours_mb = statistics.median(x.peak_mb for x in ours)
    for program in programs:
        mine = runs[program.name]
        seconds = statistics.median(x.seconds for x in mine)
        peak = statistics.median(x.peak_mb for x in mine)
        per_round = ", ".join(f"{x.seconds / o.seconds:.2f}" for x, o in zip(mine, ours))
        ratio = (
            ""
            if program is programs[0]
            else f"  {seconds / ours_s:5.2f} x ours' time [{per_round}], {peak / ours_mb:5.2f} x its memory"
        )
        print(f"  {program.name:22s} {seconds:8.2f} s {peak:8.0f} MB{ratio}")
        print(f"  {'':22s} read: {mine[-1].summary}")
    print(f"  (load after {load()})", flush=True)


def names_for(directory: Path) -> list[str]:
    """METRIC_COUNT integer metrics of serverStatus spread over its layout, none inside an array, none whose
    name has a character any peer's path syntax could split ('/', a digit-only part) or that a names file loses
    (spaces at either end)."""
    import ftdc

    schema = ftdc.read_catalog(directory).schema()
    eligible = [
        name
        for name, dtype in schema.items()
        if name.startswith("serverStatus.")
        and str(dtype) == "Int64"
        and "/" not in name
        and name == name.strip()
        and not any(part.isdigit() for part in name.split("."))
    ]
    step = len(eligible) / METRIC_COUNT
    return [eligible[int(i * step)] for i in range(METRIC_COUNT)]


def build_text_log(megabytes: int) -> Path:
    target = DATA / f"legacy-text-{megabytes}MB.log"
    if target.exists():
        return target
    DATA.mkdir(parents=True, exist_ok=True)
    sample = b"".join((TEXT_SAMPLES / name).read_bytes() for name in TEXT_SOURCES)
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        for _ in range(max(1, round(megabytes * 1e6 / len(sample)))):
            out.write(sample)
    partial.rename(target)
    return target


def warm(paths: list[Path]) -> None:
    """Read the inputs once, so the first program of the first round does not pay the disk alone."""
    for path in paths:
        for file in sorted(path.iterdir()) if path.is_dir() else [path]:
            with open(file, "rb") as f:
                while f.read(16 << 20):
                    pass


def peers_given(args: argparse.Namespace, names: tuple[str, ...]) -> dict[str, Path]:
    found = {}
    for name in names:
        value = getattr(args, name.replace("-", "_")) or os.environ.get("FTDC_PEER_" + name.upper().replace("-", "_"))
        if not value:
            print(f"skipped {name}: no path given (--{name} or FTDC_PEER_{name.upper().replace('-', '_')})")
        elif not (shutil.which(value) or Path(value).is_file()):
            print(f"skipped {name}: {value} is not there")
        else:
            found[name] = Path(shutil.which(value) or value)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--all-days", type=float, nargs="*", default=[1], help="every metric of these node lengths")
    parser.add_argument("--some-days", type=float, nargs="*", default=[3], help="100 metrics of these node lengths")
    parser.add_argument("--log-gb", type=float, nargs="*", default=[0.25, 1.0], help="JSON logs of these sizes")
    parser.add_argument("--text-mb", type=int, nargs="*", default=[20], help="a text log of this size")
    for name in FTDC_PEERS + JSON_LOG_PEERS + TEXT_LOG_PEERS:
        parser.add_argument(f"--{name}", help=f"path of the {name} program")
    args = parser.parse_args()

    from bench.bench_analyze import build_ftdc
    from bench.bench_logs import build_log

    ftdc_peers = peers_given(args, FTDC_PEERS)
    json_peers = peers_given(args, JSON_LOG_PEERS)
    text_peers = peers_given(args, TEXT_LOG_PEERS)
    print(f"cpus: {os.cpu_count()}, load {load()}, python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="bench-peers-") as scratch:
        cwd = Path(scratch)
        for days, some in [(d, False) for d in args.all_days] + [(d, True) for d in args.some_days]:
            node = build_ftdc(DATA / f"analyze-{days:g}d" / "diagnostic.data", days)
            extra: tuple[str, ...] = ()
            if some:
                listed = cwd / f"names-{days:g}d.txt"
                listed.write_text("\n".join(names_for(node)) + "\n")
                extra = (str(listed),)
            programs = [Program("ours (read_ftdc)", (sys.executable, "-c", OURS_FTDC, str(node), *extra))]
            programs += [Program(name, (str(path), str(node), *extra)) for name, path in ftdc_peers.items()]
            size = sum(f.stat().st_size for f in node.iterdir()) / 1e6
            warm([node])
            what = f"{METRIC_COUNT} metrics" if some else "every metric"
            compare(f"FTDC: {what} of {days:g} day(s) ({size:.0f} MB, {node})", programs, args.rounds, cwd)
        logs = [(build_log(gb), json_peers) for gb in args.log_gb] + [(build_text_log(mb), text_peers) for mb in args.text_mb]
        for log, peers in logs:
            programs = [Program("ours (logs)", (sys.executable, str(ROOT / "cli.py"), "logs", str(log)))]
            for name, path in peers.items():
                if name == "mdbkit":
                    programs.append(Program(name, (str(path), "queries", str(log))))
                elif name == "hatchet":
                    db = cwd / "hatchet.db"
                    programs.append(Program(name, (str(path), "-url", str(db), str(log)), fresh_file=db))
                else:
                    programs.append(Program(name, (str(path), "--queries", "--no-progressbar", str(log)), needs_tty=True))
            warm([log])
            compare(f"logs: {log.name} ({log.stat().st_size / 1e6:.0f} MB)", programs, args.rounds, cwd)


if __name__ == "__main__":
    main()
