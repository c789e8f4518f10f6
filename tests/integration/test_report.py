"""The crawl report of a real crawl, opened in headless Chromium."""

from __future__ import annotations

import json
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from extensions.observe.report_html import GAP_BINS, display_buckets
from scripts.crawlrun import PROJECT_ROOT, run_crawl, write_seeds
from scripts.testweb import HostSpec, TestWeb, WebSpec
from tests.integration.browser import read_png, run_chromium
from tests.integration.components import FETCH_ERRORS, REPORT, with_components

DELAY = 0.2
BAR_BLUE = np.array([0x4A, 0x7B, 0xD0])


def web_spec() -> WebSpec:
    return WebSpec(
        hosts=[
            HostSpec("alpha.test", pages=6, status_overrides={"/page/2": [404, {}]}),
            HostSpec("beta.test", ip_group="shared", pages=5),
            HostSpec("gamma.test", ip_group="shared", pages=5),
            HostSpec("delta.test", pages=4),
        ]
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("report")
    with TestWeb(web_spec(), lifetime=120) as web:
        settings = {
            "DNS_HOSTS_MAP": web.hosts_map_setting(),
            "FRONTIER_DELAY": DELAY,
            **with_components(REPORT, FETCH_ERRORS),
        }
        result = run_crawl(write_seeds(tmp / "seeds.txt", web.seeds), tmp / "data", settings)
    assert result.returncode == 0, result.log[-3000:]
    html_path = tmp / "data" / "items-report.html"  # beside the feed, items.jsonl
    assert f"Crawl report: {html_path}" in result.log
    data = json.loads(html_path.with_suffix(".json").read_text())
    return {"html": html_path, "data": data, "hosts": web.hosts, "tmp": tmp}


class SvgCounter(HTMLParser):
    """Per <svg id>: its data-bars attribute and the <rect class="bar"> inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, dict[str, int]] = {}
        self.current: str | None = None
        self.external: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag in ("script", "link", "img", "iframe") or "src" in a or "href" in a:
            self.external.append(tag)
        if tag == "svg":
            self.current = a.get("id") or "?"
            self.charts[self.current] = {"declared": int(a.get("data-bars") or -1), "bars": 0}
        elif tag == "rect" and self.current and "bar" in (a.get("class") or "").split():
            self.charts[self.current]["bars"] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.current = None


def test_report_data_describes_the_crawl(report) -> None:
    data = report["data"]
    assert data["reason"] == "finished" and data["delay_s"] == DELAY
    assert sum(data["timeline"]["responses"]) == data["stats"]["downloader/response_count"]
    assert set(data["hosts"]) == set(report["hosts"])
    gaps = data["gaps"]
    assert gaps["count"] >= 10 and gaps["below_delay"] == 0 and gaps["overlaps"] == 0
    assert gaps["min_s"] >= DELAY - 0.02
    # /page/2, and each host's soft-404 probe (a path no site has: a 404 on the test web).
    assert data["stats"]["fetch/errors/http_4xx"] == 1 + len(report["hosts"])


def test_the_cli_rebuilds_the_same_page_from_the_json(report, tmp_path: Path) -> None:
    out = tmp_path / "again.html"
    json_path = report["html"].with_suffix(".json")
    cmd = [
        sys.executable,
        "-m",
        "extensions.observe.report",
        "--stats",
        str(json_path),
        "--out",
        str(out),
    ]
    proc = subprocess.run(cmd, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == report["html"].read_text()
    bad = subprocess.run(
        [*cmd[:4], str(out), "--out", str(tmp_path / "x.html")],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "cannot read" in bad.stderr and "Traceback" not in bad.stderr


def test_charts_render_in_headless_chromium(report) -> None:
    proc = run_chromium(["--dump-dom", report["html"].as_uri()])
    assert proc.returncode == 0, proc.stderr[-2000:]
    parser = SvgCounter()
    parser.feed(proc.stdout)
    charts, data = parser.charts, report["data"]
    assert parser.external == [], "the report must be self-contained"
    for chart in charts.values():
        assert chart["bars"] == chart["declared"]
    timeline, _ = display_buckets(data["timeline"]["responses"], data["timeline"]["bucket_s"])
    assert charts["pages-per-second"]["bars"] == len(timeline) >= 2
    assert charts["gap-histogram"]["bars"] == GAP_BINS + 1
    assert charts["top-hosts"]["bars"] == len(report["hosts"])
    assert charts["error-breakdown"]["bars"] == 1  # the 404s
    assert charts["dup-breakdown"]["bars"] >= 2  # admitted and already seen at least
    assert 'class="delay-marker"' in proc.stdout


def test_screenshot_shows_the_charts(report) -> None:
    shot = report["tmp"] / "report.png"
    args = ["--window-size=940,1500", f"--screenshot={shot}", report["html"].as_uri()]
    proc = run_chromium(args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pixels = read_png(shot)[..., :3].reshape(-1, 3).astype(int)
    not_white = (pixels.min(axis=1) < 240).mean()
    bar_blue = np.all(np.abs(pixels - BAR_BLUE) <= 8, axis=1).mean()
    assert not_white > 0.03, f"page looks blank ({not_white:.1%} non-white pixels)"
    assert bar_blue > 0.01, f"no chart bars visible ({bar_blue:.2%} bar-blue pixels)"
