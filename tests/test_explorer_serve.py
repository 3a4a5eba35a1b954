"""`ftdc-analyze explore --serve` (issue 36 §1): the page from a server on 127.0.0.1 that gives the real samples of a
range, counters as the page's rates; every parameter checked, another host refused, nothing but the page and the
samples of the metrics the page holds; the command serves until Ctrl-C."""

from __future__ import annotations

import contextlib
import http.client
import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import quote

import pytest
from test_explorer import CRAFTED, START, write_node

import analysis
from analysis.outputs.report import explore
from analysis.outputs.report.explorer_serve import MAX_SAMPLES, node_of, server

ROOT = Path(__file__).resolve().parents[1]
T0 = int(START.timestamp() * 1000)
LEVEL, OPERATIONS = "serverStatus.made up.level", "serverStatus.made up.operations"


@contextlib.contextmanager
def serving(directory: Path):
    """A node of 100 minutes at 1 s (columns of 2.5 s) in `directory`, served on a free port: (server, explorer)."""
    path = write_node(directory / "diagnostic.data", seconds=6000)
    result = analysis.analyze(path)
    explorer = explore(result, path, "node")
    httpd = server([explorer], [node_of(explorer, result)])
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield httpd, explorer
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    with serving(tmp_path_factory.mktemp("serve")) as both:
        yield both


def get(httpd, path: str, host: str | None = None) -> tuple[int, dict, bytes]:
    port = httpd.server_address[1]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.putrequest("GET", path, skip_host=True)
    connection.putheader("Host", host or f"127.0.0.1:{port}")
    connection.endheaders()
    answer = connection.getresponse()
    return answer.status, dict(answer.getheaders()), answer.read()


def test_it_listens_on_127_0_0_1_only_and_serves_the_page(served):
    httpd, explorer = served
    assert httpd.server_address[0] == "127.0.0.1"
    status, headers, body = get(httpd, "/")
    assert status == 200 and "connect-src 'self'" in headers["Content-Security-Policy"]
    data = json.loads(re.search(rb'class="explorer-data">(.*?)</script>', body, re.S).group(1))
    assert data["served"] == 0 and data["period"] == 1 and data["step"] == 2.5  # 6,000 s in 2,400 columns


def test_the_samples_of_a_range_are_the_recorded_ones_and_counters_their_rates(served):
    httpd, _ = served
    lo, hi = T0 + 600_000, T0 + 660_000
    status, _, body = get(httpd, f"/samples?node=0&metric={LEVEL.replace(' ', '%20')}&from={lo}&to={hi}")
    level = json.loads(body)
    assert status == 200 and level["t"] == [(T0 + 1000 * i) / 1000 for i in range(600, 661)]
    assert level["v"] == [(i * 7) % 13 for i in range(600, 661)]  # one value per sample, as recorded
    status, _, body = get(httpd, f"/samples?node=0&metric={OPERATIONS.replace(' ', '%20')}&from={lo}&to={hi}")
    assert status == 200 and json.loads(body)["v"] == [5.0] * 61  # +5 a second: the rate the page draws


@pytest.mark.parametrize(
    "path, status",
    [
        ("/samples?node=0&metric=serverStatus.pid&from=0&to=1000", 200),
        ("/samples?node=1&metric=serverStatus.pid&from=0&to=1000", 404),  # one node here
        ("/samples?node=0&metric=..%2F..%2Fetc%2Fpasswd&from=0&to=1000", 404),  # a name, never a path
        ("/samples?node=0&metric=writes_latency_ms&from=0&to=1000", 404),  # derived: the page holds them whole
        ("/samples?node=0&metric=serverStatus.pid&from=abc&to=1000", 400),
        ("/samples?node=0&metric=serverStatus.pid&from=1e3&to=2000", 400),
        ("/samples?node=0&metric=serverStatus.pid&from=2000&to=1000", 400),
        (f"/samples?node=0&metric=serverStatus.pid&from=0&to={(MAX_SAMPLES + 2) * 1000}", 400),  # too long a range
        ("/samples?node=0&node=0&metric=serverStatus.pid&from=0&to=1000", 400),
        ("/samples?node=0&metric=serverStatus.pid&from=0", 400),
        ("/samples?%zz", 400),
        ("/../../etc/passwd", 404),
        ("/diagnostic.data/metrics.interim", 404),
    ],
)
def test_every_parameter_is_checked(served, path, status):
    httpd, _ = served
    got, headers, body = get(httpd, path)
    assert got == status and (status == 200 or b"passwd" not in body), body


def test_a_crafted_metric_name_is_only_looked_up(served):
    httpd, _ = served
    name = "serverStatus." + CRAFTED
    got, _, body = get(httpd, f"/samples?node=0&metric={quote(name, safe='')}&from={T0}&to={T0 + 2000}")
    assert got == 200 and json.loads(body)["v"] == [None, 1.0, 1.0]  # it counts: its rate, none before the first


def test_another_host_is_refused(served):
    httpd, _ = served
    for host in ("attacker.example", f"attacker.example:{httpd.server_address[1]}", "127.0.0.1:1"):
        status, _, body = get(httpd, "/", host)
        assert status == 403 and b"explorer" not in body


def test_the_command_serves_until_ctrl_c(tmp_path):
    path = write_node(tmp_path / "diagnostic.data")
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", "explore", str(path), "--serve"], cwd=ROOT, stderr=subprocess.PIPE, text=True
    )
    try:
        line = ""
        while "serving" not in line:
            line = process.stderr.readline()
            assert line, "the command ended before serving"
        port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line).group(1))
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        connection.request("GET", "/")
        assert connection.getresponse().status == 200
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0 and "stopped" in process.stderr.read()
    finally:
        process.kill()
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", port, timeout=5).request("GET", "/")


def test_explore_wants_a_page_or_serve(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "cli", "explore", str(ROOT / "samples" / "diagnostic.data")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "-o page.html) or --serve" in result.stderr
