"""Benchmark of `ftdc-analyze explore` against `ftdc-analyze` (the analysis) on the same node (issue 38:
explore <= 1.5 x analyze).

The node is bench_analyze's (a day or a week at 1 s in the real 7.0 layout, built once under
bench/data/analyze-<days>d/). In one run, alternating rounds, the load average recorded around each round:
  processes   `python cli.py DIR --no-log` (the analysis and its terminal report) and
              `python cli.py explore DIR -o page.html --no-log` (the analysis, the explorer's data, the page), each
              a fresh process, as a user runs them (the node's FTDC alone, as in one process)
  in-process  analysis.analyze(DIR) and what the explore command does in the same process: the analysis with
              every metric kept by its pass (`keep_metrics`), `explore` (every recorded metric reduced to its
              extremes per pixel column) and `write_explorer`
Each figure is the ratio of explore's time to analyze's in one round; the median over rounds is reported, of the
wall-clock times and of the CPU times (every thread's, the children's for the processes: on a machine shared with
other jobs the CPU time moves less with the load than the wall clock).

and, of the page of the last round: its size, its series (every metric of the node and the derived series), how many
are written as runs of one level, and the median time Chromium takes to open it (`--page-only`: only these, of a
page written once, with no timing of explore against analyze).

    python -m bench.bench_explore [--days 1 7] [--rounds 5] [--page-only]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from bench.bench_analyze import ROOT, build_ftdc


def _cpu(children: bool = False) -> float:
    if children:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime
    return time.process_time()


def _process(args: list[str]) -> None:
    subprocess.run([sys.executable, str(ROOT / "cli.py"), *args], check=True, cwd=ROOT, capture_output=True)


def _timed(action, children: bool = False) -> tuple[float, float]:
    """(wall-clock seconds, CPU seconds) of `action`."""
    wall, cpu = time.perf_counter(), _cpu(children)
    action()
    return time.perf_counter() - wall, _cpu(children) - cpu


def measure(directory: Path, page: Path, rounds: int) -> dict:
    import warnings

    import analysis
    from analysis.outputs.report import explore, write_explorer

    warnings.simplefilter("ignore")
    # The once-a-process costs (imports, the first mappings of the allocator) and the page cache, before any clock.
    write_explorer(explore(analysis.analyze(directory, keep_metrics=True), directory, "bench"), page)

    def explored() -> None:
        # As the command does: the analysis' pass keeps every metric for the explorer.
        write_explorer(explore(analysis.analyze(directory, keep_metrics=True), directory, "bench"), page)

    rows: dict[str, list[tuple[float, float]]] = {k: [] for k in ("analyze_cli", "explore_cli", "analyze", "explore")}
    loads = []
    for k in range(rounds):
        load = os.getloadavg()[0]
        # Which of the two goes first alternates, so a drift of the machine's load weighs on both alike.
        pairs = [
            # `--no-log`: bench_analyze --log leaves its 1 GB log beside the node, which both would read (7 of a
            # week's 9 s), and the FTDC's analysis is what the explorer is measured against.
            ("analyze_cli", lambda: _process([str(directory), "--no-log"])),
            ("explore_cli", lambda: _process(["explore", str(directory), "-o", str(page), "--no-log"])),
            ("analyze", lambda: analysis.analyze(directory)),
            ("explore", explored),
        ]
        for first, second in (pairs[0:2], pairs[2:4]):
            for name, action in (first, second) if k % 2 == 0 else (second, first):
                rows[name].append(_timed(action, children=name.endswith("_cli")))
        loads.append(round((load + os.getloadavg()[0]) / 2, 1))
        print(
            "  "
            + "; ".join(
                f"{where}: analyze {rows[a][-1][0]:.2f} s ({rows[a][-1][1]:.2f} s CPU), explore {rows[e][-1][0]:.2f} s "
                f"({rows[e][-1][1]:.2f} s CPU): x {rows[e][-1][0] / rows[a][-1][0]:.2f} (CPU x {rows[e][-1][1] / rows[a][-1][1]:.2f})"
                for where, a, e in (("processes", "analyze_cli", "explore_cli"), ("in-process", "analyze", "explore"))
            )
            + f"; load {loads[-1]}",
            file=sys.stderr,
        )

    def ratios(over: str, under: str, k: int) -> list[float]:
        return [round(a[k] / b[k], 2) for a, b in zip(rows[over], rows[under])]

    out: dict = {f"{name}_s": round(statistics.median(t for t, _ in times), 2) for name, times in rows.items()}
    for where, a, e in (("processes", "analyze_cli", "explore_cli"), ("in_process", "analyze", "explore")):
        for k, clock in ((0, ""), (1, "_cpu")):
            every = ratios(e, a, k)
            out[f"explore_over_analyze_{where}{clock}"] = round(statistics.median(every), 2)
            out[f"all_{where}{clock}"] = every
    return {**out, **page_figures(page), "load_average": loads}


def page_only(directory: Path, page: Path) -> dict:
    import warnings

    import analysis
    from analysis.outputs.report import explore, write_explorer

    warnings.simplefilter("ignore")
    load = os.getloadavg()[0]
    result = analysis.analyze(directory)
    seconds, cpu = _timed(lambda: write_explorer(explore(result, directory, "bench"), page))
    return {
        "explore_s": round(seconds, 1),
        "explore_cpu_s": round(cpu, 1),
        **page_figures(page),
        "load_average": round((load + os.getloadavg()[0]) / 2, 1),
    }


def page_figures(page: Path, opens: int = 3) -> dict:
    """The page's size, what it holds (series, those written as runs of one level: constant ones, flat rates), and
    the median time Chromium takes to open it (navigation to the end of the load event, the explorer's setup and
    its opening panels drawn within it), when Chromium is installed."""
    import re

    text = page.read_text(encoding="utf-8")
    data = json.loads(re.search(r'class="explorer-data">(.*?)</script>', text, re.S).group(1))
    figures = {
        "explorer_html_mb": round(page.stat().st_size / 1e6, 2),
        "series": len(data["series"]),
        "series_as_runs": sum("runs" in s for s in data["series"]),
        "columns": data["columns"],
    }
    from tests.test_browser import Chromium, find_chromium  # the browser tests' driver (`tests` as a namespace package)

    binary = find_chromium()
    if binary:
        times = []
        for _ in range(opens):
            with Chromium(binary, width=1400, height=900) as browser:
                browser.open(page.as_uri())
                times.append(browser.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
        figures["open_ms"] = round(statistics.median(times))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--days", type=float, nargs="+", default=[1, 7])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--page-only", action="store_true", help="only the page's size and open time, written once")
    args = parser.parse_args()
    out = {}
    for days in args.days:
        base = ROOT / "bench" / "data" / f"analyze-{days:g}d"
        base.mkdir(parents=True, exist_ok=True)
        directory = build_ftdc(base / "diagnostic.data", days)
        print(f"{days:g} d: {directory}", file=sys.stderr)
        page = base / "explorer.html"
        out[f"{days:g}d"] = page_only(directory, page) if args.page_only else measure(directory, page, args.rounds)
        print(json.dumps({f"{days:g}d": out[f"{days:g}d"]}), file=sys.stderr)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
