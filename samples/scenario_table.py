"""The README's accuracy table: per scenario, what was injected against what `analyze` found.

    python samples/scenario_table.py

The same comparison as tests/test_scenarios.py (kind, resource, window within the
truth's tolerance), printed as Markdown.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import analysis  # noqa: E402

SCENARIOS = Path(__file__).resolve().parent / "scenarios"


def _time(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))


def _label(kind: str, resource) -> str:
    return f"{kind} ({resource})" if resource else kind


def row(folder: Path) -> str:
    truth = json.loads((folder / "truth.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = analysis.analyze(folder / "diagnostic.data", folder / "mongod.log")
    matched = 0
    for want in truth["findings"]:
        tolerance = dt.timedelta(seconds=want["tolerance_s"])
        matched += any(f.kind == want["kind"] and f.resource == want["resource"] and abs(f.start - _time(want["start"])) <= tolerance
                       and abs(f.end - _time(want["end"])) <= tolerance for f in result.problems)
    extra = [f for f in result.problems if f.kind in truth["absent"]]
    expected = Counter(_label(f["kind"], f["resource"]) for f in truth["findings"])
    found = Counter(_label(f.kind, f.resource) for f in result.problems)
    show = lambda c: ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in sorted(c.items())) or "none"  # noqa: E731
    ok = matched == len(truth["findings"]) and not extra and (truth["findings"] or not result.problems)
    return f"| {folder.name} | {show(expected)} | {show(found)} | {'yes' if ok else 'no'} |"


def main() -> None:
    print("| scenario | injected (warning or critical) | found | windows match, nothing else raised |")
    print("|---|---|---|---|")
    for folder in sorted(p for p in SCENARIOS.iterdir() if (p / "truth.json").exists()):
        print(row(folder))


if __name__ == "__main__":
    main()
