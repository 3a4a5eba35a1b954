"""Benchmark of the fleet path (issue 14 §3): one analysis per node, three ways, side by side.

Builds, once, under bench/data/fleet-<N>x<H>h/: N nodes of H hours each (a day by
default), written by the project's simulator (samples/simulate.py, the healthy
node of the scenarios) in the 4.2, 6.0, 7.0 and 8.0 layouts, two replica sets and
standalones. Then measures on the same nodes, rounds alternating:
  loop   analysis.fleet.run(workers=1): this process, node after node
  pool   analysis.fleet.run(workers=W): a spawn process pool
  spark  analysis.fleet.run_spark on local[W] (its JVM started before timing;
         the start-up is printed apart)
each writing findings/ and series/ into a fresh directory, and prints the
per-node analyse time (median, from the loop), the totals, spark/pool per round
(the first round starts Spark's Python workers, later rounds reuse them: target
<= 1.3 on 2 cores from the second round), the load average during each round,
and the peak RSS of a pool worker and a Spark Python worker
against a process that analysed one node alone (memory per worker bounded by
one node).

    python -m bench.bench_fleet [--nodes 8] [--hours 24] [--workers 2] [--rounds 2]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from bench import megabytes

ROOT = Path(__file__).resolve().parents[1]

LAYOUTS = [("4.2.24", "4.2"), ("6.0.14", "6.0"), ("7.0.12", "7.0"), ("8.0.4", "8.0")]


def _build_node(args: tuple[Path, int, int]) -> None:
    from samples.make_scenarios import Healthy
    from samples.simulate import Config, write_ftdc

    target, index, seconds = args
    version, layout = LAYOUTS[index % len(LAYOUTS)]
    replica_set = ["rs-a", "rs-b", None][index % 3]
    config = Config(version=version, layout=layout, host=f"fleet-{index:03d}.example.net", replica_set=replica_set, seed=index)
    write_ftdc(target / "diagnostic.data", config, dt.datetime(2024, 6, 1, tzinfo=dt.timezone.utc), seconds, Healthy(index))


def build(nodes: int, hours: float) -> list[Path]:
    from analysis.fleet import spawn_pool

    root = ROOT / "bench" / "data" / f"fleet-{nodes}x{hours:g}h"
    paths = [root / f"node{i:03d}" for i in range(nodes)]
    if not (root / "complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        with spawn_pool(2) as pool:
            list(pool.map(_build_node, [(p, i, int(hours * 3600)) for i, p in enumerate(paths)]))
        (root / "complete").touch()
    return [p / "diagnostic.data" for p in paths]


def _peak_rss_mb() -> float:
    return megabytes(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _analyse_measured(path: str) -> tuple[float, float]:
    """In a worker: analyse one node; its seconds and the worker's peak RSS so far."""
    from analysis.fleet import analyse_unit

    began = time.perf_counter()
    analyse_unit([(path, None)])
    return time.perf_counter() - began, _peak_rss_mb()


def one_node_rss(path: Path) -> float:
    code = f"import sys, warnings; warnings.simplefilter('ignore'); import bench.bench_fleet as b; print(b._analyse_measured({str(path)!r})[1])"
    return float(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout.split()[-1]
    )


def spark_workers(spark, paths: list[Path]) -> tuple[list[float], float]:
    """Each node's analyse seconds inside a Spark Python worker, and the workers' peak RSS."""
    import pyarrow as pa

    def measure(batches):
        for batch in batches:
            for row in batch.to_pylist():
                seconds, rss = _analyse_measured(row["path"])
                yield pa.RecordBatch.from_pylist([{"seconds": seconds, "rss": rss}])

    listed = spark.createDataFrame(spark.sparkContext.parallelize([(str(p),) for p in paths], len(paths)), "path string")
    rows = listed.mapInArrow(measure, "seconds double, rss double").collect()
    return [r["seconds"] for r in rows], max(r["rss"] for r in rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--hours", type=float, default=24)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from pyspark.sql import SparkSession

    from analysis import fleet
    from analysis.fleet import spawn_pool

    paths = build(args.nodes, args.hours)
    size = sum(f.stat().st_size for p in paths for f in p.iterdir())
    began = time.perf_counter()
    spark = (
        SparkSession.builder.master(f"local[{args.workers}]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", str(args.workers))
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.range(1).collect()
    startup = time.perf_counter() - began

    per_node = [_analyse_measured(str(p))[0] for p in paths]
    engines = {
        "loop": lambda out: fleet.run(paths, out, workers=1),
        "pool": lambda out: fleet.run(paths, out, workers=args.workers),
        "spark": lambda out: fleet.run_spark(spark, [str(p) for p in paths], str(out)).collect(),
    }
    times: dict[str, list[float]] = {name: [] for name in engines}
    loads = []
    for _ in range(args.rounds):
        loads.append(os.getloadavg()[0])
        for name, go in engines.items():
            out = Path(tempfile.mkdtemp(prefix=f"bench-fleet-{name}-"))
            began = time.perf_counter()
            go(out)
            times[name].append(time.perf_counter() - began)
            shutil.rmtree(out)
    with spawn_pool(args.workers) as pool:
        in_pool = list(pool.map(_analyse_measured, map(str, paths)))
    pool_rss = max(rss for _, rss in in_pool)
    in_spark, spark_rss = spark_workers(spark, paths)
    alone = one_node_rss(paths[0])
    spark.stop()

    median = {name: statistics.median(t) for name, t in times.items()}
    print(f"{len(paths)} nodes x {args.hours:g} h ({size / 1e6:.0f} MB of FTDC), {args.workers} workers, {args.rounds} round(s)")
    print(
        f"per-node analyse: median {statistics.median(per_node):.2f} s (min {min(per_node):.2f}, max {max(per_node):.2f}); "
        f"in a pool worker {statistics.median(s for s, _ in in_pool):.2f} s, in a Spark worker {statistics.median(in_spark):.2f} s"
    )
    for name in engines:
        print(f"{name:6s} {median[name]:7.1f} s   ({', '.join(f'{t:.1f}' for t in times[name])})")
    by_round = [spark / pool for spark, pool in zip(times["spark"], times["pool"])]
    later = f"{statistics.median(by_round[1:]):.2f}x" if len(by_round) > 1 else "(one round)"
    print(
        f"spark / pool by round {', '.join(f'{r:.2f}' for r in by_round)} (load {', '.join(f'{x:.1f}' for x in loads)}): "
        f"first round {by_round[0]:.2f}x, later rounds {later} (target <= 1.3)"
    )
    print(f"pool speed-up over loop {median['loop'] / median['pool']:.2f}x; Spark start-up {startup:.1f} s not counted")
    print(f"peak RSS: pool worker {pool_rss:.0f} MB, Spark Python worker {spark_rss:.0f} MB, one node alone {alone:.0f} MB")


if __name__ == "__main__":
    main()
