"""Benchmark of the log reader on a ~1 GB JSON log (issue 2).

Builds bench/data/mongod-6.0.11-1GB.log by repeating the decompressed 6.0.11
sample, then measures side by side, in one process, alternating rounds:
  floor      read the file and split it into lines
  json.loads the naive approach: json.loads of every line (results discarded,
             the cheapest form of it)
  read_logs   ftdc.read_logs on the same file (native decoding on every core,
              default threads)
  read_logs/1 the same with workers=1 (one block at a time)
and the peak RSS (VmHWM) of read_logs in a fresh subprocess. Everything runs
in-process: there are no worker processes to add.

For memory's worst case, also a log of the same size made of nothing but the
shortest slow-query line (a slow `hello`, 262 bytes: the most rows per byte),
read plain and gzipped, peak RSS each.

    python -m bench.bench_logs [--gb 1.0] [--rounds 2]

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


def timed(fn, path: Path) -> tuple[float, int]:
    start = time.perf_counter()
    result = fn(path)
    return time.perf_counter() - start, result


def peak_rss(path: Path) -> dict:
    """Peak RSS (MB) of read_logs in a fresh interpreter.

    VmHWM, not ru_maxrss: after fork+exec ru_maxrss still holds the parent's peak.
    """
    code = (
        "import sys, json;"
        "from ftdc.logs import read_logs; frames = read_logs(sys.argv[1]);"
        "peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0]) / 1024;"
        "print(json.dumps({'peak_mb': peak, 'rows': frames.slow_ops.height}))"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], cwd=ROOT, check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--text", action="store_true", help="only legacy text against JSON logs, MB/s each")
    args = parser.parse_args()
    if args.text:
        text_against_json(args.gb, args.rounds)
        return
    path = build_log(args.gb)
    size_mb = path.stat().st_size / 1e6
    print(f"input: {path} ({size_mb:.0f} MB), cpus: {os.cpu_count()}")
    best: dict[str, float] = {}
    for round_no in range(1, args.rounds + 1):
        for name, fn in (
            ("floor", floor),
            ("json.loads", naive_json),
            ("read_logs", with_read_logs),
            ("read_logs/1", with_read_logs_one_block),
        ):
            seconds, result = timed(fn, path)
            best[name] = min(best.get(name, seconds), seconds)
            print(f"round {round_no} {name:10s} {seconds:7.2f} s  ({size_mb / seconds:6.0f} MB/s)  -> {result}")
    print(", ".join(f"{name} {seconds:.2f} s" for name, seconds in best.items()))
    for name in ("read_logs", "read_logs/1"):
        print(
            f"{name}: {best['json.loads'] / best[name]:.2f}x faster than the json.loads loop (target >= 3),"
            f" {best[name] / best['floor']:.2f}x the floor (target <= 3)"
        )
    rss = peak_rss(path)
    print(f"peak RSS of read_logs: {rss['peak_mb']:.0f} MB (target < 2048), {rss['rows']} slow ops")
    for worst in build_short_slow(args.gb):
        rss = peak_rss(worst)
        print(
            f"peak RSS of read_logs, short slow queries only, {worst.name} ({worst.stat().st_size / 1e6:.0f} MB on disk):"
            f" {rss['peak_mb']:.0f} MB (target < 2048), {rss['rows']} slow ops"
        )


if __name__ == "__main__":
    main()
