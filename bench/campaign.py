"""The fuzz campaign: a million inputs per target, spread over every entry point.

    python -m bench.campaign                        # the whole plan (see PLAN), both targets
    python -m bench.campaign --target logs --scale 0.01
    python -m bench.campaign --replay ftdc/read/12345    # one input again, in this process

Each input is made from a real file by the format-aware mutators of `bench/mutators.py`,
numbered, and reproduced from its number alone (`random.Random("target/entry/number")`).
Workers (one per core) run blocks of inputs under a **memory limit** (the parent kills a worker
whose resident memory passes `--memory`, and the address space is capped at twice that) and a
**time limit per input** (the parent kills a worker stuck on one input past the entry's limit);
a killed or crashed worker is replaced and the block goes on after the input it stopped on.

Every input ends in one of:
- **ok** / **warnings**: the entry point finished (with warnings: damage named and skipped);
- **documented error**: `FTDCError` or `NotALog` from the library, exit 2 with one `error:`
  line from the command line;
- **defect**: any other exception, a wrong exit code, a broken promise (the catalog and the
  reader disagree; a line neither a row nor a problem; a control character from the input
  reaching the terminal; a hostile string raw in a page; a CSV cell read as a formula), a crash
  (the process died: a Rust panic that aborts, a segfault), a hang (over the time limit) or an
  allocation over the memory limit. Each distinct defect's input is saved to `--findings`.

The counts go to `--out` (JSON) and print as the table docs/hardening.md holds.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing as mp
import os
import queue
import random
import resource
import shutil
import sys
import tempfile
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "samples"
DEMO = ROOT / "samples"

OUTCOMES = ("ok", "warnings", "documented error", "defect")
ARCHIVE_NAME = "metrics.2024-05-14T09-00-00Z-00000"


# --- the plan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    target: str  # "ftdc" or "logs"
    name: str
    inputs: int  # in the full plan
    seconds: float  # time limit per input
    block: int  # inputs a worker takes at once


# Cheap entry points take most inputs; those that run an analysis (about a second an input)
# take thousands. Each target's inputs sum to at least 1,000,000.
PLAN = [
    Entry("ftdc", "read", 330_000, 20, 500),
    Entry("ftdc", "scan", 220_000, 20, 500),
    Entry("ftdc", "catalog", 220_000, 20, 500),
    Entry("ftdc", "metadata", 200_000, 20, 500),
    Entry("ftdc", "csv", 12_000, 30, 100),
    Entry("ftdc", "parquet", 12_000, 30, 100),
    Entry("ftdc", "dataset", 4_000, 60, 50),
    Entry("ftdc", "analyze", 1_500, 180, 10),
    Entry("ftdc", "report", 600, 180, 10),
    Entry("ftdc", "explore", 600, 180, 10),
    Entry("ftdc", "fleet", 300, 180, 10),
    Entry("logs", "read", 700_000, 20, 500),
    Entry("logs", "logs", 298_000, 20, 200),
    Entry("logs", "analyze", 1_500, 180, 10),
    Entry("logs", "report", 600, 180, 10),
    Entry("logs", "explore", 300, 180, 10),
    Entry("logs", "fleet", 300, 180, 10),
]
ENTRIES = {f"{e.target}/{e.name}": e for e in PLAN}


# --- inputs -----------------------------------------------------------------------------------


def ftdc_seeds() -> list[tuple[str, str, list]]:
    """(name, file name, documents): small real files, or the first chunks of larger ones."""
    from bench.mutators import split_ftdc

    def first(path: Path, documents: int) -> list:
        return split_ftdc(path.read_bytes())[:documents]

    ftdc = SHARED / "ftdc"
    return [
        ("go-writer", ARCHIVE_NAME, first(ftdc / "go-writer-synthetic" / "perf_metrics_small.ftdc", 100)),
        (
            "mongod-4.2.1",
            ARCHIVE_NAME,
            first(ftdc / "mongod-4.2.1" / "diagnostic.data" / "metrics.2021-07-13T01-43-32Z-00000", 3),
        ),
        ("mongod-7.0-interim", "metrics.interim", first(ftdc / "mongod-7.0" / "diagnostic.data" / "metrics.interim", 2)),
        ("mongod-8.0-chunk", ARCHIVE_NAME, first(next((ftdc / "mongod-8.0-chunk").iterdir()), 3)),
        ("demo", ARCHIVE_NAME, first(DEMO / "diagnostic.data" / ARCHIVE_NAME, 3)),
        ("demo-interim", "metrics.interim", first(DEMO / "diagnostic.data" / "metrics.interim", 2)),
    ]


def log_seeds() -> list[tuple[str, list[bytes]]]:
    """Real log lines: JSON (the demo, 6.0.11, Atlas 8.0) and text (4.2, 4.0, 3.6, 2.6)."""
    import gzip

    logs = SHARED / "logs"
    text = logs / "legacy-text"
    return [
        ("demo-json", (DEMO / "mongod.log").read_bytes().splitlines()),
        ("6.0.11-json", gzip.decompress((logs / "mongod-6.0.11" / "sample-mongod.log.gz").read_bytes()).splitlines()[:4000]),
        ("atlas-8.0-json", gzip.decompress(next((logs / "atlas-8.0.12").iterdir()).read_bytes()).splitlines()[:4000]),
        ("4.2.11-text", (text / "mongod_4.2.11.log").read_bytes().splitlines()),
        ("4.0.10-text", (text / "mongod_4.0.10_slowtransactions.log").read_bytes().splitlines()[:4000]),
        ("3.6.23-text", (text / "mongod_3.6.23.log").read_bytes().splitlines()[:4000]),
        ("2.6-text", (text / "mongod_26.log").read_bytes().splitlines()),
    ]


def emptied(directory: Path) -> Path:
    """`directory`, there and empty: what the last input left in it removed, the folders kept (removing and making
    them again cost more than reading a small input)."""
    if not directory.is_dir():
        shutil.rmtree(directory, ignore_errors=True)
        directory.mkdir(parents=True)
        return directory
    for child in directory.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink()
    return directory


class Inputs:
    """Input number N of an entry point, written under `place`, from the seeds."""

    def __init__(self):
        from bench.mutators import pruned, split_ftdc

        self.ftdc = ftdc_seeds()
        # Most inputs start from a small file in a real node's shape (a millisecond to read, against
        # 15-50 for a real chunk of 1,000-3,500 metrics); one in ten from the real documents.
        self.small = [
            (f"{name}-{leaves}-{k}", file_name, split_ftdc(pruned(documents, random.Random(f"{name}/{k}"), leaves)))
            for name, file_name, documents in self.ftdc
            for k, leaves in enumerate([8, 30, 60, 120, 400])
        ]
        self.logs = log_seeds()

    def make(self, entry: Entry, number: int, place: Path) -> Path:
        from bench.mutators import mutate_ftdc, mutate_log

        rng = random.Random(f"{entry.target}/{entry.name}/{number}")
        if entry.target == "ftdc":
            # The analyses get the real documents more often: a day's shape is what they read.
            real = rng.random() < (0.5 if entry.seconds > 60 else 0.1)
            _, file_name, documents = rng.choice(self.ftdc if real else self.small)
            directory = emptied(place / "diagnostic.data")
            (directory / file_name).write_bytes(mutate_ftdc(documents, rng))
            return directory
        path = emptied(place) / "mongod.log"
        path.write_bytes(mutate_log(rng.choice(self.logs)[1], rng))
        return path


# --- the entry points -------------------------------------------------------------------------


class Defect(Exception):
    """A promise the input broke (not an exception of the code under test)."""


def _library(call) -> str:
    import warnings

    import ftdc

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
        except (ftdc.FTDCError, ftdc.NotALog):
            return "documented error"
    return "warnings" if caught else "ok"


def _cli(*args: str) -> tuple[str, str]:
    """Runs the command line in this process: (outcome, what it printed)."""
    from typer import testing

    from cli import app

    # typer builds the click command anew on each invoke (7 ms, a third of a small log's input):
    # built once here (typer is pinned below 0.27, where `_get_command` is its builder).
    if not hasattr(testing._get_command, "cache_info"):
        testing._get_command = functools.cache(testing._get_command)
    result = testing.CliRunner().invoke(app, list(args), catch_exceptions=True, env={"COLUMNS": "120"})
    printed = result.stdout + result.stderr
    _inert(printed)
    if result.exit_code == 0:
        return ("warnings" if "warning:" in result.stderr else "ok"), printed
    error_lines = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    exited = result.exception is None or isinstance(result.exception, SystemExit)
    if result.exit_code == 2 and len(error_lines) == 1 and exited:
        return "documented error", printed
    if not exited:
        raise result.exception
    raise Defect(f"exit {result.exit_code}: {(result.stderr.strip().splitlines() or [''])[-1][:160]}")


def _inert(text: str) -> None:
    from ftdc.untrusted import UNSAFE

    raw = sorted({m[0] for m in UNSAFE.finditer(text)} - {"\n", "\t"})
    if raw:
        raise Defect(f"control character {raw[0]!r} reached the terminal")


def _page(path: Path) -> None:
    """A page or document holds no hostile string of the input raw."""
    if not path.exists():
        return
    for written in [path, *(path.parent.glob(f"{path.stem}*/*"))]:
        if written.suffix in (".html", ".md", ".json") and b"<script>alert(1)" in written.read_bytes():
            raise Defect(f"a script from the input is raw in {written.suffix}")
    if path.suffix == ".json":
        json.loads(path.read_text())


def _csv_cells(text: str) -> None:
    import csv
    import io

    from ftdc.untrusted import cell

    for row in csv.reader(io.StringIO(text)):
        for value in row:
            if cell(value) != value:
                raise Defect(f"a CSV cell reads as a formula: {value[:40]!r}")


def _ftdc_entry(name: str, node: Path, out: Path, rng: random.Random) -> str:
    import ftdc

    if name == "read":
        return _library(lambda: ftdc.read_ftdc(node))
    if name == "scan":
        return _library(lambda: _scan(node, rng))
    if name == "catalog":
        return _library(lambda: _catalog_agrees(node))
    if name == "metadata":
        return _library(lambda: ftdc.read_metadata(node))
    if name in ("csv", "parquet"):
        return _cli("export", str(node), "--out", str(out / f"x.{name}"))[0]
    if name == "dataset":
        return _cli("export", str(node), "--dataset", str(out / "dataset"))[0]
    if name == "analyze":
        return _cli(str(node), "--no-log")[0]
    if name == "report":
        report = out / f"report.{rng.choice(['html', 'md', 'json'])}"
        outcome = _cli(str(node), "--no-log", "--report", str(report))[0]
        _page(report)
        return outcome
    if name == "explore":
        page = out / "explore.html"
        outcome = _cli("explore", str(node), "--no-log", "--out", str(page))[0]
        _page(page)
        return outcome
    if name == "fleet":
        return _cli("fleet", str(node), "--out", str(out / "fleet"), "--engine", "loop")[0]
    raise ValueError(name)


def _scan(node: Path, rng: random.Random) -> None:
    """A lazy scan with a time predicate and a few metrics, as a notebook would write it."""
    import datetime as dt

    import polars as pl

    import ftdc

    frame = ftdc.scan_ftdc(node)
    names = frame.collect_schema().names()
    since = dt.datetime(2024, 5, 14, 9, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=rng.randint(-(10**6), 10**6))
    chosen = ["start", *rng.sample(names[1:], min(3, len(names) - 1))]
    frame.filter(pl.col("start") >= since).select(chosen).collect()


def _catalog_agrees(node: Path) -> None:
    import ftdc

    catalog = ftdc.read_catalog(node)
    frame = ftdc.read_ftdc(node)
    if set(frame.columns) != set(catalog.schema()):
        raise Defect("the catalog and the reader disagree on the metrics")


def _log_entry(name: str, log: Path, out: Path, rng: random.Random) -> str:
    import ftdc

    demo = str(DEMO / "diagnostic.data")
    if name == "read":
        return _library(lambda: _rows_or_problems(log))
    if name == "logs":
        fmt = rng.choice(["table", "json", "csv"])
        args = ["logs", str(log), "--format", fmt] + (["--problems"] if rng.random() < 0.3 else [])
        outcome, printed = _cli(*args)
        if fmt == "csv" and outcome != "documented error":
            _csv_cells(printed.split("\nwarning:")[0])
        return outcome
    if name == "analyze":
        return _cli(demo, "--log", str(log))[0]
    if name == "report":
        report = out / f"report.{rng.choice(['html', 'md', 'json'])}"
        outcome = _cli(demo, "--log", str(log), "--report", str(report))[0]
        _page(report)
        return outcome
    if name == "explore":
        page = out / "explore.html"
        outcome = _cli("explore", demo, "--log", str(log), "--out", str(page))[0]
        _page(page)
        return outcome
    if name == "fleet":
        return _cli("fleet", demo, "--log", str(log), "--out", str(out / "fleet"), "--engine", "loop")[0]
    del ftdc
    raise ValueError(name)


RUNNERS = {"ftdc": _ftdc_entry, "logs": _log_entry}


def _rows_or_problems(log: Path) -> None:
    import polars as pl

    import ftdc

    frames = ftdc.read_logs(log, workers=1)
    lines = log.read_bytes().count(b"\n")
    seen = pl.concat([frames.slow_ops["line"], frames.events["line"], frames.problems["line"]]).drop_nulls().unique()
    if set(seen.to_list()) != set(range(1, lines + 1)):
        raise Defect("a line is neither a row nor a problem")


def run_one(entry: Entry, path: Path, out: Path, number: int) -> str:
    """The outcome of one input; raises on a defect."""
    emptied(out)
    rng = random.Random(f"{entry.target}/{entry.name}/{number}/run")
    return RUNNERS[entry.target](entry.name, path, out, rng)


def defect_key(e: BaseException) -> str:
    """What makes two defects the same: the exception, its first line, where it was raised."""
    where = traceback.extract_tb(e.__traceback__)[-1] if e.__traceback__ else None
    message = str(e).splitlines()[0][:160] if str(e) else ""
    return f"{type(e).__name__}: {message}" + (f" @ {Path(where.filename).name}:{where.name}" if where else "")


# --- workers and the watchdog -----------------------------------------------------------------


def _worker(tasks, results, progress, scratch: Path, memory: int) -> None:
    """Runs blocks `(entry key, first, last)` until told to stop (None)."""
    resource.setrlimit(resource.RLIMIT_AS, (2 * memory, 2 * memory))
    import polars  # noqa: F401  (loaded before the first input's clock)

    inputs = Inputs()
    place, out = scratch / "input", scratch / "out"
    while (task := tasks.get()) is not None:
        key, first, last = task
        entry = ENTRIES[key]
        counts: Counter = Counter()
        found: dict[str, int] = {}
        for number in range(first, last):
            progress[0], progress[1] = number, time.monotonic()
            path = inputs.make(entry, number, place)
            try:
                counts[run_one(entry, path, out, number)] += 1
            except BaseException as e:  # a Rust panic is a BaseException
                if isinstance(e, KeyboardInterrupt):
                    raise
                counts["defect"] += 1
                found.setdefault(defect_key(e), number)
        progress[0] = -1
        results.put((key, first, last, dict(counts), found))


@dataclass
class Worker:
    process: mp.Process
    tasks: mp.Queue
    progress: object  # mp.Array("d", 2): the input it is on (-1: none), since when
    task: tuple | None = None


def _rss(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def campaign(
    keys: list[str],
    scale: float,
    workers: int,
    memory: int,
    findings: Path,
    minutes: float | None = None,
    earlier: dict | None = None,
    save: Path | None = None,
    report_every: float = 60,
) -> dict:
    """Runs the plan's inputs for `keys` (those `earlier` ran excepted), for at most `minutes`
    when given, and returns the counts and defects of each, `earlier`'s included."""
    context = mp.get_context("fork")
    results = context.Queue()
    ran = {tuple(b) for b in (earlier or {}).get("blocks", [])}
    blocks = []
    for key in keys:
        entry = ENTRIES[key]
        total = max(1, round(entry.inputs * scale))
        blocks += [(key, first, min(first + entry.block, total)) for first in range(0, total, entry.block)]
    blocks = [b for b in blocks if b not in ran]
    # Cheap and costly blocks interleaved: a run stopped by --minutes has run each entry point's share.
    random.Random(0).shuffle(blocks)
    blocks.reverse()  # popped from the end
    empty = {"inputs": 0, **dict.fromkeys(OUTCOMES, 0), "crash": 0, "hang": 0, "memory": 0, "defects": {}}
    totals = {key: json.loads(json.dumps((earlier or {}).get("entries", {}).get(key, empty))) for key in keys}
    finished: list[tuple] = sorted(ran)
    deadline = time.monotonic() + 60 * minutes if minutes else float("inf")
    inputs = Inputs()
    root = Path(tempfile.mkdtemp(prefix="ftdc-campaign-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    pool: list[Worker] = []

    def start(i: int) -> Worker:
        tasks, progress = context.Queue(), context.Array("d", [-1.0, 0.0], lock=False)
        scratch = root / f"w{i}"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        process = context.Process(target=_worker, args=(tasks, results, progress, scratch, memory), daemon=True)
        process.start()
        return Worker(process, tasks, progress)

    def record(key: str, kind: str, number: int, detail: str) -> None:
        counts = totals[key]
        counts[kind] += 1
        counts["inputs"] += 1
        name = f"{kind}: {detail}"
        if name not in counts["defects"]:
            counts["defects"][name] = _save(inputs, ENTRIES[key], number, findings)

    started, last_report, done = time.monotonic(), time.monotonic(), 0

    def snapshot() -> dict:
        seconds = time.monotonic() - started + (earlier or {}).get("seconds", 0)
        return {"seconds": seconds, "workers": workers, "memory": memory, "scale": scale, "entries": totals, "blocks": finished}

    planned = sum(last - first for _, first, last in blocks)
    pool = [start(i) for i in range(workers)]
    try:
        while (blocks and time.monotonic() < deadline) or any(w.task for w in pool):
            for i, w in enumerate(pool):
                if w.task is None and blocks and time.monotonic() < deadline:
                    w.task = blocks.pop()
                    w.tasks.put(w.task)
                if w.task is None:
                    continue
                key, first, last = w.task
                number, since = int(w.progress[0]), w.progress[1]
                died = not w.process.is_alive()
                late = number >= 0 and time.monotonic() - since > ENTRIES[key].seconds
                heavy = _rss(w.process.pid) > memory
                if died or late or heavy:
                    kind = "crash" if died else "hang" if late else "memory"
                    detail = (
                        f"exit code {w.process.exitcode}"
                        if died
                        else f"over {ENTRIES[key].seconds:g} s"
                        if late
                        else f"over {memory >> 20} MB"
                    )
                    w.process.kill()
                    w.process.join()
                    # What the block counted before is lost with the worker: run those again in the new one.
                    stopped = max(number, first)
                    record(key, kind, stopped, detail)
                    done += 1
                    finished.append((key, stopped, stopped + 1))
                    rest = [(key, first, stopped), (key, stopped + 1, last)]
                    blocks += [b for b in rest if b[2] > b[1]]
                    pool[i] = start(i)
            try:
                while True:
                    key, first, last, counts, found = results.get(timeout=0.05)
                    for w in pool:
                        if w.task == (key, first, last):
                            w.task = None
                    totals[key]["inputs"] += last - first
                    finished.append((key, first, last))
                    done += last - first
                    for outcome, n in counts.items():
                        totals[key][outcome] += n
                    for name, number in found.items():
                        if name not in totals[key]["defects"]:
                            totals[key]["defects"][name] = _save(inputs, ENTRIES[key], number, findings)
            except queue.Empty:
                pass
            if time.monotonic() - last_report > report_every:
                last_report = time.monotonic()
                elapsed = last_report - started
                defects = sum(t["defect"] + t["crash"] + t["hang"] + t["memory"] for t in totals.values())
                if save is not None:  # a run stopped from outside keeps what it counted
                    save.write_text(json.dumps(snapshot()))
                print(
                    f"{done:,} of {planned:,} inputs in {elapsed / 60:.0f} min, {defects} defects, load {os.getloadavg()[0]:.1f}",
                    file=sys.stderr,
                    flush=True,
                )
    finally:
        for w in pool:
            w.tasks.put(None)
            w.process.join(timeout=5)
            if w.process.is_alive():
                w.process.kill()
        shutil.rmtree(root, ignore_errors=True)
    return snapshot()


def _save(inputs: Inputs, entry: Entry, number: int, findings: Path) -> str:
    """The input written under `findings`, named by its number, to become a test."""
    place = findings / f"{entry.target}-{entry.name}-{number}"
    inputs.make(entry, number, place)
    return str(place)


# --- the table ---------------------------------------------------------------------------------


def table(result: dict) -> str:
    """Markdown: inputs and outcomes per target and entry point, then the sums."""
    lines = [
        "| target | entry point | inputs | ok | warnings | documented errors | anything else |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    sums: dict[str, Counter] = {}
    for key, counts in result["entries"].items():
        target, name = key.split("/")
        other = counts["defect"] + counts["crash"] + counts["hang"] + counts["memory"]
        row = [counts["inputs"], counts["ok"], counts["warnings"], counts["documented error"], other]
        sums.setdefault(target, Counter()).update(dict(zip(("inputs", "ok", "warnings", "error", "other"), row)))
        lines.append(f"| {target} | {name} | " + " | ".join(f"{n:,}" for n in row) + " |")
    for target, s in sums.items():
        lines.append(
            f"| **{target}** | **all** | **{s['inputs']:,}** | {s['ok']:,} | {s['warnings']:,} | {s['error']:,} | **{s['other']:,}** |"
        )
    return "\n".join(lines)


def replay(spec: str) -> None:
    """Runs input `target/entry/number` in this process, letting its exception through."""
    target, name, number = spec.split("/")
    entry = ENTRIES[f"{target}/{name}"]
    place = Path(tempfile.mkdtemp(prefix="ftdc-replay-"))
    path = Inputs().make(entry, int(number), place / "input")
    print(f"input: {path}", file=sys.stderr)
    print(run_one(entry, path, place / "out", int(number)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=["ftdc", "logs", "all"], default="all")
    parser.add_argument("--entry", action="append", help="entry points to run (target/name); default: the plan's")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the plan's inputs (0.001 for a trial)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--memory", type=int, default=3 << 30, help="bytes of resident memory a worker may hold")
    parser.add_argument("--findings", type=Path, default=Path(tempfile.gettempdir()) / "ftdc-campaign-findings")
    parser.add_argument("--minutes", type=float, help="stop starting blocks after this long (the shares stay even)")
    parser.add_argument("--out", type=Path, help="the counts as JSON; with --resume, the run it continues")
    parser.add_argument("--resume", action="store_true", help="skip the blocks --out says ran, and add to its counts")
    parser.add_argument("--replay", help="target/entry/number: run one input again here")
    args = parser.parse_args()
    if args.replay:
        replay(args.replay)
        return
    keys = args.entry or [key for key, e in ENTRIES.items() if args.target in ("all", e.target)]
    earlier = json.loads(args.out.read_text()) if args.resume and args.out and args.out.exists() else None
    scale = earlier["scale"] if earlier else args.scale  # the blocks are those of the run resumed
    result = campaign(keys, scale, args.workers, args.memory, args.findings, args.minutes, earlier, args.out)
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    print(table(result))
    print(f"\n{result['seconds'] / 60:.1f} min, {args.workers} workers, load {os.getloadavg()[0]:.1f}")
    for key, counts in result["entries"].items():
        for name, saved in counts["defects"].items():
            print(f"{key}: {name}\n    input: {saved}")


if __name__ == "__main__":
    main()
