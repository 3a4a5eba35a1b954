"""Benchmark of the log reader on JSON logs of ~0.25 and ~1 GB (issues 2 and 38).

Builds bench/data/mongod-6.0.11-<size>GB.log by repeating the decompressed 6.0.11
sample, then, for each size, measures side by side in one process, alternating
rounds (medians; the load average printed beside):
  floor       read the file and split it into lines
  json.loads  the naive approach: json.loads of every line (results discarded,
              the cheapest form of it)
  read_logs   ftdc.read_logs on the same file (native decoding on every core,
              default threads), every column
  narrowed    read_logs as the `logs` command reads (report.NARROWING: the summary's
              columns, the longest runs' commands)
  read_logs/1 every column with workers=1 (one block at a time)
then, as whole processes alternating with a floor process, the `logs` command
(`--format json`) with its time and peak RSS (VmHWM), also with polars' allocator as polars
sets it (freed pages kept half a second) rather than as the command line does, and the peak RSS of read_logs
and of the narrowed read in fresh subprocesses, against the target
size x 0.5 + 200 MB.

For memory's worst case, also a log of the largest size made of nothing but the
shortest slow-query line (a slow `hello`, 262 bytes: the most rows per byte),
read plain and gzipped, peak RSS each.

    python -m bench.bench_logs [--gb 0.25 1.0] [--rounds 3] [--against CHECKOUT]

With --text, only legacy text logs (the 4.2.11 text sample repeated) against the JSON
log of the same size, read_logs in MB/s each, alternating rounds, medians, load beside:

    python -m bench.bench_logs --text --gb 0.25 --rounds 3
"""

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench import megabytes

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT.parent / "shared" / "samples" / "logs" / "mongod-6.0.11" / "sample-mongod.log.gz"
DATA = ROOT / "bench" / "data"


def build_log(gigabytes: float) -> Path:
    target = DATA / f"mongod-6.0.11-{gigabytes:g}GB.log"
    if target.exists():
        return target
    DATA.mkdir(parents=True, exist_ok=True)
    sample = gzip.decompress(SAMPLE.read_bytes())
    copies = max(1, round(gigabytes * 1e9 / len(sample)))
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        for _ in range(copies):
            out.write(sample)
    partial.rename(target)
    return target


# Memory's worst case: the shortest slow-query line mongod writes (a slow `hello`),
# so the most rows per byte, each row ~50 columns however little the line holds.
SHORT_SLOW = (
    b'{"t":{"$date":"2024-01-02T03:04:05.678+00:00"},"s":"I","c":"COMMAND","id":51803,"ctx":"conn7","msg":"Slow query",'
    b'"attr":{"type":"command","ns":"admin.$cmd","command":{"hello":1,"$db":"admin"},"numYields":0,"reslen":313,'
    b'"protocol":"op_msg","durationMillis":120}}\n'
)


def build_short_slow(gigabytes: float) -> tuple[Path, Path]:
    """A log of nothing but short slow queries, plain and gzipped (level 1)."""
    plain = DATA / f"short-slow-{gigabytes:g}GB.log"
    packed = plain.with_name(plain.name + ".gz")
    if not plain.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        partial = plain.with_suffix(".partial")
        piece = SHORT_SLOW * 10_000
        with open(partial, "wb") as out:
            for _ in range(max(1, round(gigabytes * 1e9 / len(piece)))):
                out.write(piece)
        partial.rename(plain)
    if not packed.exists():
        partial = packed.with_suffix(".partial")
        with open(plain, "rb") as source, gzip.open(partial, "wb", compresslevel=1) as out:
            while piece := source.read(16 << 20):
                out.write(piece)
        partial.rename(packed)
    return plain, packed


TEXT_SAMPLE = ROOT.parent / "shared" / "samples" / "logs" / "legacy-text" / "mongod_4.2.11.log"


def build_text_log(gigabytes: float) -> Path:
    """A legacy text log of about `gigabytes`, the 4.2.11 text sample repeated."""
    target = DATA / f"mongod-4.2.11-{gigabytes:g}GB.log"
    if not target.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        sample = TEXT_SAMPLE.read_bytes()
        partial = target.with_suffix(".partial")
        with open(partial, "wb") as out:
            for _ in range(max(1, round(gigabytes * 1e9 / len(sample)))):
                out.write(sample)
        partial.rename(target)
    return target


def text_against_json(gigabytes: float, rounds: int) -> None:
    """read_logs on a text log and a JSON log of the same size, alternating, in MB/s
    (median of the rounds), with the load average beside: the text rate's target is
    at least half the JSON one."""
    paths = {"text": build_text_log(gigabytes), "json": build_log(gigabytes)}
    rates: dict[str, list[float]] = {name: [] for name in paths}
    for round_no in range(1, rounds + 1):
        for name, path in paths.items():
            seconds, rows = timed(lambda p: len(_frames(p).events), path)
            rates[name].append(path.stat().st_size / 1e6 / seconds)
            print(f"round {round_no} {name} {seconds:7.2f} s ({rates[name][-1]:6.1f} MB/s) -> {rows} events, load {_load()}")
    text, json_rate = statistics.median(rates["text"]), statistics.median(rates["json"])
    print(
        f"{gigabytes:g} GB: text {text:.1f} MB/s, JSON {json_rate:.1f} MB/s, text/JSON {text / json_rate:.2f} (target >= 0.5), load {_load()}"
    )


def _frames(path: Path):
    from ftdc.logs import read_logs

    return read_logs(path)


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def floor(path: Path) -> int:
    with open(path, "rb") as f:
        return len(f.read().split(b"\n"))


def naive_json(path: Path) -> int:
    with open(path, "rb") as f:
        lines = f.read().split(b"\n")
    loads = json.loads
    for line in lines:
        if line:
            loads(line)
    return len(lines)


def with_read_logs(path: Path) -> int:
    from ftdc.logs import read_logs

    return read_logs(path).slow_ops.height


def with_read_logs_one_block(path: Path) -> int:
    from ftdc.logs import read_logs

    return read_logs(path, workers=1).slow_ops.height


def with_narrowed(path: Path) -> int:
    from ftdc.logs import read_logs, report

    return read_logs(path, narrowing=report.NARROWING).slow_ops.height


def timed(fn, path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    result = fn(path)
    return time.perf_counter() - start, result


def load() -> str:
    return open("/proc/loadavg").read().split()[0]


_PEAK = "peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]);"  # KiB


def peak_rss(path: Path, narrowed: bool = False) -> dict:
    """Peak RSS (MB) of read_logs (or the `logs` command's narrowed read) in a fresh interpreter.

    VmHWM, not ru_maxrss: after fork+exec ru_maxrss still holds the parent's peak.
    """
    narrowing = ", narrowing=report.NARROWING" if narrowed else ""
    code = (
        "import sys, json;"
        "from ftdc.logs import read_logs, report;"
        f"frames = read_logs(sys.argv[1]{narrowing});"
        + _PEAK
        + "print(json.dumps({'peak_kib': peak, 'rows': frames.slow_ops.height}))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, check=True, capture_output=True, text=True)
    figures = json.loads(out.stdout)
    return {"peak_mb": megabytes(figures["peak_kib"]), "rows": figures["rows"]}


# polars' allocator as polars sets it, without the command line's setting (ftdc.memory): freed pages kept half a
# second, a second more mapped; in another order than polars writes it, so that the command takes it for the user's.
KEPT_PAGES = "muzzy_decay_ms:1000,dirty_decay_ms:500"


def logs_command(path: Path, root: Path = ROOT, allocator: str | None = None) -> dict:
    """Time and peak RSS (MB) of `ftdc-analyze logs PATH --format json` as a whole process (of the checkout at `root`),
    with polars' allocator set to `allocator` where given."""
    code = "\n".join(
        [
            "import runpy, sys",
            "sys.argv = ['ftdc-analyze', 'logs', sys.argv[1], '--format', 'json']",
            "try:",
            "    runpy.run_path('cli.py', run_name='__main__')",
            "finally:",
            "    " + _PEAK + " print(peak, file=sys.stderr)",
        ]
    )
    start = time.perf_counter()
    env = {**os.environ, "PYTHONPATH": str(root)} | ({"_RJEM_MALLOC_CONF": allocator} if allocator else {})
    out = subprocess.run([sys.executable, "-c", code, str(path.resolve())], cwd=root, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    if out.returncode:
        raise RuntimeError(out.stderr)
    return {"seconds": seconds, "peak_mb": megabytes(float(out.stderr.split()[-1]))}


def floor_process(path: Path) -> float:
    code = "import sys; f = open(sys.argv[1], 'rb'); n = len(f.read().split(b'\\n'))"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code, str(path)], check=True)
    return time.perf_counter() - start


def measure(path: Path, rounds: int, against: Path | None) -> None:
    size_mb = path.stat().st_size / 1e6
    print(f"input: {path} ({size_mb:.0f} MB), cpus: {os.cpu_count()}, load {load()}")
    times: dict[str, list[float]] = {}
    for round_no in range(1, rounds + 1):
        for name, fn in (
            ("floor", floor),
            ("json.loads", naive_json),
            ("read_logs", with_read_logs),
            ("narrowed", with_narrowed),
            ("read_logs/1", with_read_logs_one_block),
        ):
            seconds, result = timed(fn, path)
            times.setdefault(name, []).append(seconds)
            print(f"round {round_no} {name:11s} {seconds:7.2f} s  ({size_mb / seconds:6.0f} MB/s)  -> {result}  load {load()}")
    best = {name: statistics.median(values) for name, values in times.items()}
    print(", ".join(f"{name} {seconds:.2f} s" for name, seconds in best.items()) + f" (medians), load {load()}")
    for name in ("read_logs", "narrowed", "read_logs/1"):
        print(
            f"{name}: {best['json.loads'] / best[name]:.2f}x faster than the json.loads loop (target >= 3),"
            f" {best[name] / best['floor']:.2f}x the floor (target <= 3)"
        )
    runs: dict[str, list[dict]] = {}
    floors = []
    for _ in range(rounds):
        floors.append(floor_process(path))
        for name, root, allocator in (
            ("this checkout", ROOT, None),
            ("this checkout, polars' own allocator setting", ROOT, KEPT_PAGES),
            ("--against", against, None),
        ):
            if root is not None:
                runs.setdefault(name, []).append(logs_command(path, root, allocator))
    target = size_mb * 0.5 + 200
    for name, command in runs.items():
        seconds = statistics.median(c["seconds"] for c in command)
        print(
            f"`logs` command, {name}: {seconds:.2f} s, {seconds / statistics.median(floors):.2f}x a floor process;"
            f" peak RSS {max(c['peak_mb'] for c in command):.0f} MB (target <= {target:.0f}), load {load()}"
        )
    for narrowed in (False, True):
        rss = peak_rss(path, narrowed)
        print(f"peak RSS of read_logs{' (narrowed)' if narrowed else ''}: {rss['peak_mb']:.0f} MB, {rss['rows']} slow ops")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", type=Path, help="another checkout (the code before a change): its `logs` command alternates")
    parser.add_argument("--text", action="store_true", help="only legacy text against JSON logs, MB/s each")
    args = parser.parse_args()
    if args.text:
        for gigabytes in args.gb:
            text_against_json(gigabytes, args.rounds)
        return
    for gigabytes in args.gb:
        measure(build_log(gigabytes), args.rounds, args.against)
    for worst in build_short_slow(max(args.gb)):
        rss = peak_rss(worst)
        print(
            f"peak RSS of read_logs, short slow queries only, {worst.name} ({worst.stat().st_size / 1e6:.0f} MB on disk):"
            f" {rss['peak_mb']:.0f} MB (target < 2048), {rss['rows']} slow ops"
        )


if __name__ == "__main__":
    main()
