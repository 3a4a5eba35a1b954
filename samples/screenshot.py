"""Rewrites samples/report-screenshot.png, the README's picture of the demo's HTML report:
the top of the page (headline and the first finding) in headless Chromium, 1280 px wide.

    python3 -m samples.screenshot [--out PATH] [--height PIXELS]

The report is built and the browser driven by the helpers of tests/test_browser.py
(the browser test checks the same page renders cleanly).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tests.test_browser import Chromium, build_demo_report, find_chromium

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "samples" / "report-screenshot.png")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=1000)
    args = parser.parse_args()
    binary = find_chromium()
    if binary is None:
        sys.exit("chromium is not installed (apt-get install chromium)")
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.html"
        build_demo_report(report)
        with Chromium(binary, width=args.width, height=args.height) as browser:
            browser.open(report.as_uri())
            png = browser.screenshot(full_page=False)
            if browser.errors():
                sys.exit(f"the report logged errors: {browser.errors()}")
    args.out.write_bytes(png)
    print(f"wrote {args.out} ({len(png) // 1024} KB)")


if __name__ == "__main__":
    main()
