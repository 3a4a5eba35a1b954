"""Long fuzz runs of the targets in tests/fuzz_targets.py (issue 19 §6).

    python -m bench.fuzz --seconds 300            # each target for 5 minutes, from the checkout
    python -m bench.fuzz --target logs --seconds 60

The real samples are read from ../shared/samples. Prints, per target, how many inputs ran and the distinct failures found; each failing
input is saved under --findings (default /tmp/ftdc-fuzz-findings) to become a test.
CI runs the same targets for a bounded number of inputs (tests/test_fuzz_targets.py).
"""

from __future__ import annotations

import argparse
import tempfile
import time
import traceback
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from bench.fuzz_targets import check_ftdc, check_log, ftdc_seeds, log_seeds, mutated_ftdc, mutated_log

SHARED_SAMPLES = Path(__file__).resolve().parents[2] / "shared" / "samples"

TARGETS = {
    "ftdc": (lambda: ftdc_seeds(SHARED_SAMPLES / "ftdc"), mutated_ftdc, check_ftdc, "metrics.2024-05-14T09-00-00Z-00000"),
    "logs": (lambda: log_seeds(SHARED_SAMPLES / "logs"), mutated_log, check_log, "mongod.log"),
}


def fuzz(name: str, seconds: float, findings: Path) -> tuple[int, dict[str, Path]]:
    """Inputs run and {failure: saved input} for `name`, for about `seconds`."""
    load, mutated, check, file_name = TARGETS[name]
    seeds = load()
    scratch = Path(tempfile.mkdtemp(prefix=f"fuzz-{name}-"))
    ran = 0
    found: dict[str, Path] = {}

    @settings(max_examples=50, deadline=None, database=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
    @given(data=st.data())
    def one(data) -> None:
        nonlocal ran
        seed = seeds[data.draw(st.sampled_from(sorted(seeds)))]
        path = scratch / file_name
        path.write_bytes(mutated(seed, data.draw))
        ran += 1
        try:
            check(path)
        except BaseException as e:  # a Rust panic is a BaseException
            key = f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''} @ {traceback.extract_tb(e.__traceback__)[-1].name}"
            if key not in found:
                findings.mkdir(parents=True, exist_ok=True)
                found[key] = findings / f"{name}-{len(found) + 1}-{file_name}"
                found[key].write_bytes(path.read_bytes())
            raise

    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            one()
        except BaseException as e:
            if isinstance(e, KeyboardInterrupt):
                break
    return ran, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", choices=[*TARGETS, "all"], default="all")
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--findings", type=Path, default=Path(tempfile.gettempdir()) / "ftdc-fuzz-findings")
    args = parser.parse_args()
    for name in TARGETS if args.target == "all" else [args.target]:
        started = time.monotonic()
        ran, found = fuzz(name, args.seconds, args.findings)
        print(f"{name}: {ran:,} inputs in {time.monotonic() - started:,.0f} s, {len(found)} distinct failure(s)")
        for failure, saved in found.items():
            print(f"  {failure}\n    input: {saved}")


if __name__ == "__main__":
    main()
