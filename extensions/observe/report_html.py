"""The crawl report as one self-contained HTML page: inline CSS and SVG drawn here,
no script, no external resource (it opens offline, from a file, in any browser).

Every bar is a `<rect class="bar">` with a `<title>` tooltip, inside an `<svg>` whose
id names the chart and whose `data-bars` says how many bars it holds (tests count them).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

WIDTH, HEIGHT = 860, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 12, 26, 34
GAP_BINS = 20  # + one overflow bin
MAX_BARS = 120  # timeline bars shown; stored buckets are merged down to this
MIN_BAR_S = 0.4  # narrower bars show fetch bursts (all IPs come due together), not a rate
TOP_HOSTS = 15
CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px auto; max-width: 900px; color: #222; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 16px; margin: 28px 0 6px; }
.sub { color: #666; margin-top: 0; }
table.summary { border-collapse: collapse; }
table.summary td { padding: 2px 16px 2px 0; } table.summary td:first-child { color: #666; }
svg { background: #fafafa; border: 1px solid #e4e4e4; }
.bar { fill: #4a7bd0; } .bar.below-delay { fill: #d0504a; }
.axis { stroke: #999; stroke-width: 1; } .grid { stroke: #e4e4e4; stroke-width: 1; }
.delay-marker { stroke: #d0504a; stroke-width: 2; stroke-dasharray: 5 3; }
text { font-size: 11px; fill: #444; } text.value { fill: #222; } text.note { font-size: 13px; }
"""


def render(data: dict[str, Any]) -> str:
    stats = data.get("stats", {})
    title = f"Crawl report: {data.get('spider', '?')} ({data.get('reason', '?')})"
    parts = [
        f"<h1>{_e(title)}</h1>",
        f'<p class="sub">{_e(data.get("started_at", ""))} to {_e(data.get("finished_at", ""))}'
        f" &middot; FRONTIER_DELAY {data.get('delay_s', 0):g} s</p>",
        _summary(data, stats),
        "<h2>Pages per second</h2>",
        timeline_chart(data.get("timeline", {})),
        "<h2>Politeness gaps against the configured delay (this worker)</h2>",
        gap_chart(data.get("gaps", {}), float(data.get("delay_s", 0))),
        "<h2>Top hosts by responses</h2>",
        hbar_chart("top-hosts", list(data.get("hosts", {}).items())[:TOP_HOSTS]),
        "<h2>Duplicates and URL gates</h2>",
        hbar_chart("dup-breakdown", dup_rows(stats, data)),
        "<h2>Errors by cause</h2>",
        hbar_chart("error-breakdown", error_rows(stats)),
        "<h2>Crawl budget: trap feedback</h2>",
        hbar_chart("trap-feedback", trap_rows(stats)),
        closed_patterns(stats),
    ]
    body = "\n".join(parts)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _summary(data: dict[str, Any], stats: dict[str, Any]) -> str:
    timeline = data.get("timeline", {})
    responses = sum(timeline.get("responses", []))
    elapsed = float(stats.get("elapsed_time_seconds") or data.get("elapsed_s") or 0)
    gaps = data.get("gaps", {})
    min_gap = gaps.get("min_s")
    rows = [
        ("items", stats.get("item_scraped_count", 0)),
        ("responses", responses),
        ("elapsed", f"{elapsed:.1f} s"),
        ("mean pages/s", f"{responses / elapsed:.2f}" if elapsed > 0 else "n/a"),
        ("bytes received", f"{stats.get('downloader/response_bytes', 0):,}"),
        ("errors", f"{sum(v for _, v in error_rows(stats)):g}"),
        ("URL duplicate rate", _rate(stats)),
        ("content duplicate rate", _share(data.get("content_duplicates"), data.get("items"))),
        ("gaps observed", f"{gaps.get('count', 0)} ({gaps.get('below_delay', 0)} below delay)"),
        ("smallest gap", "n/a" if min_gap is None else f"{min_gap:.3f} s"),
        ("finish reason", data.get("reason", "?")),
    ]
    cells = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows)
    return f'<table class="summary">{cells}</table>'


def _share(part: Any, whole: Any) -> str:
    part, whole = float(part or 0), float(whole or 0)
    return f"{100 * part / whole:.1f}%" if whole else "n/a"


def _rate(stats: dict[str, Any]) -> str:
    """Discovered URLs already seen, of all discovered URLs that reached URL-seen."""
    duplicate = float(stats.get("frontier/duplicate") or 0)
    return _share(duplicate, duplicate + float(stats.get("frontier/admitted") or 0))


def _nice_max(value: float) -> float:
    """The smallest 1/2/5 x 10^k at or above value (axis top)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= value)


def _svg(chart_id: str, bars: int, height: int, inner: Sequence[str]) -> str:
    return (
        f'<svg id="{chart_id}" data-bars="{bars}" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" xmlns="http://www.w3.org/2000/svg" role="img">'
        + "".join(inner)
        + "</svg>"
    )


def _bar(x: float, y: float, w: float, h: float, tip: str, extra: str = "") -> str:
    cls = f"bar {extra}".strip()
    return (
        f'<rect class="{cls}" x="{x:.2f}" y="{y:.2f}" width="{max(w, 0.5):.2f}" '
        f'height="{max(h, 0):.2f}"><title>{_e(tip)}</title></rect>'
    )


def _axes(top: float, unit: str) -> list[str]:
    """Frame, horizontal grid lines and y labels for a vertical bar chart."""
    x0, y0, y1 = LEFT, HEIGHT - BOTTOM, TOP
    out = [f'<line class="axis" x1="{x0}" y1="{y0}" x2="{WIDTH - RIGHT}" y2="{y0}"/>']
    for k in range(5):
        y = y0 - (y0 - y1) * k / 4
        out.append(f'<line class="grid" x1="{x0}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}"/>')
        label = f"{top * k / 4:g}"
        out.append(f'<text x="{x0 - 6}" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
    out.append(f'<text x="{x0}" y="{y1 - 10}">{_e(unit)}</text>')
    return out


def _vbars(
    values: Sequence[float],
    tips: Sequence[str],
    unit: str,
    xlabels: Sequence[tuple[int, str]],
    classes: Sequence[str] = (),
) -> tuple[list[str], float]:
    """Vertical bars; returns the SVG parts and the x scale (px per bar)."""
    top = _nice_max(max(values, default=0))
    inner = _axes(top, unit)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    step = plot_w / max(len(values), 1)
    for i, value in enumerate(values):
        h = plot_h * value / top
        cls = classes[i] if i < len(classes) else ""
        x = LEFT + (i + 0.1) * step
        inner.append(_bar(x, HEIGHT - BOTTOM - h, 0.8 * step, h, tips[i], cls))
    for i, label in xlabels:
        x = LEFT + i * step
        y = HEIGHT - BOTTOM + 16
        inner.append(f'<text x="{x:.1f}" y="{y}" text-anchor="middle">{_e(label)}</text>')
    return inner, step


def display_buckets(counts: Sequence[int], width: float) -> tuple[list[int], float]:
    """Merge adjacent buckets until at most MAX_BARS remain, each at least MIN_BAR_S
    wide: (counts, bucket width)."""
    merged, factor = list(counts), 1
    while len(merged) > MAX_BARS or (width * factor < MIN_BAR_S and len(merged) > 1):
        factor *= 2
        merged = [sum(counts[i : i + factor]) for i in range(0, len(counts), factor)]
    return merged, width * factor


def timeline_chart(timeline: dict[str, Any]) -> str:
    counts, width = display_buckets(
        timeline.get("responses", []), float(timeline.get("bucket_s", 1.0))
    )
    rates = [c / width for c in counts]
    tips = [f"{i * width:g}-{(i + 1) * width:g} s: {r:.2f} pages/s" for i, r in enumerate(rates)]
    every = max(1, math.ceil(len(rates) / 10))
    xlabels = [(i, f"{i * width:g}s") for i in range(0, len(rates) + 1, every)]
    inner, _ = _vbars(rates, tips, "pages/s", xlabels)
    if not rates:
        inner.append(_note("no responses"))
    return _svg("pages-per-second", len(rates), HEIGHT, inner)


def gap_bins(sample: Sequence[float], delay: float) -> tuple[float, list[int]]:
    """(bin width, counts): GAP_BINS bins from 0 up to max(2 x delay, 95th percentile),
    then one overflow bin for everything beyond."""
    ordered = sorted(sample)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0
    upper = max(2 * delay, p95) or 0.001
    width = upper / GAP_BINS
    counts = [0] * (GAP_BINS + 1)
    for gap in ordered:
        counts[min(GAP_BINS, int(gap * GAP_BINS / upper))] += 1
    return width, counts


def gap_chart(gaps: dict[str, Any], delay: float) -> str:
    sample = gaps.get("sample", [])
    if not sample:
        return _svg("gap-histogram", 0, HEIGHT, [*_axes(1.0, "gaps"), _note("no gaps observed")])
    width, counts = gap_bins(sample, delay)
    tips = [f"{i * width:.3f}-{(i + 1) * width:.3f} s: {c}" for i, c in enumerate(counts[:-1])]
    tips.append(f">= {GAP_BINS * width:.3f} s: {counts[-1]}")
    # A bin is red when its gaps are all shorter than the delay.
    classes = ["below-delay" if (i + 1) * width <= delay else "" for i in range(GAP_BINS)] + [""]
    xlabels = [(i, f"{i * width:.2g}s") for i in range(0, GAP_BINS, 4)]
    xlabels.append((GAP_BINS, f">={GAP_BINS * width:.2g}s"))
    inner, step = _vbars(counts, tips, "gaps", xlabels, classes)
    x = LEFT + step * delay / width
    marker = f'x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{HEIGHT - BOTTOM}"'
    inner.append(f'<line class="delay-marker" {marker}><title>delay {delay:g} s</title></line>')
    inner.append(f'<text x="{x + 4:.1f}" y="{TOP + 12}">delay {delay:g} s</text>')
    return _svg("gap-histogram", len(counts), HEIGHT, inner)


def _note(text: str) -> str:
    at = f'x="{WIDTH / 2}" y="{HEIGHT / 2}"'
    return f'<text class="note" {at} text-anchor="middle">{_e(text)}</text>'


def hbar_chart(chart_id: str, rows: Sequence[tuple[str, float]]) -> str:
    """Horizontal bars, one labelled row each."""
    row_h, label_w = 22, 260
    height = max(1, len(rows)) * row_h + 12
    top = max((v for _, v in rows), default=0) or 1
    bar_w = WIDTH - label_w - 80
    inner = []
    for i, (label, value) in enumerate(rows):
        y = 6 + i * row_h
        w = bar_w * value / top
        inner.append(f'<text x="{label_w - 8}" y="{y + 15}" text-anchor="end">{_e(label)}</text>')
        inner.append(_bar(label_w, y + 3, w, row_h - 6, f"{label}: {value:g}"))
        inner.append(f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + 15}">{value:g}</text>')
    if not rows:
        inner.append(f'<text class="note" x="{WIDTH / 2}" y="22" text-anchor="middle">none</text>')
        height = 34
    return _svg(chart_id, len(rows), height, inner)


def _prefixed(stats: dict[str, Any], prefix: str, label: str) -> list[tuple[str, float]]:
    return [
        (f"{label}{name.removeprefix(prefix)}", float(value))
        for name, value in sorted(stats.items())
        if name.startswith(prefix) and isinstance(value, int | float) and value
    ]


def dup_rows(stats: dict[str, Any], data: dict[str, Any]) -> list[tuple[str, float]]:
    rows = [
        ("URLs admitted", float(stats.get("frontier/admitted", 0))),
        ("URLs already seen", float(stats.get("frontier/duplicate", 0))),
        *_prefixed(stats, "frontier/rejected/", "rejected: "),
        *_prefixed(stats, "frontier/dropped/", "dropped: "),
        *_prefixed(stats, "content/", "content: "),
        ("items marked duplicate_of", float(data.get("content_duplicates", 0))),
    ]
    return [(label, value) for label, value in rows if value]


TRAP_COUNTERS = (
    ("patterns closed", "trap_closed"),
    ("patterns reopened", "trap_reopened"),
    ("patterns demoted", "trap_demoted"),
    ("probes of closed patterns", "trap_probes"),
    ("URLs refused: pattern closed", "pattern_closed"),
    ("numbered sequences ended", "sequence_ended"),
    ("URLs refused: past a sequence's end", "past_the_end"),
    ("URLs refused: facet cap", "facet_cap"),
    ("URLs refused: pattern cap", "pattern_cap"),
    ("URLs refused: host budget", "host_budget"),
)


def trap_rows(stats: dict[str, Any]) -> list[tuple[str, float]]:
    """The frontier's crawl-budget counters (copied from Redis at close: crawl-wide)."""
    rows = [(label, float(stats.get(f"frontier/redis/{key}", 0))) for label, key in TRAP_COUNTERS]
    dropped = float(stats.get("frontier/dropped/pattern_closed", 0))
    rows.append(("queued URLs dropped: pattern closed (this worker)", dropped))
    past = float(stats.get("frontier/dropped/past_the_end", 0))
    rows.append(("queued URLs dropped: past a sequence's end (this worker)", past))
    return [(label, value) for label, value in rows if value]


def closed_patterns(stats: dict[str, Any]) -> str:
    html = _code_list(
        stats.get("frontier/closed_patterns"),
        "URL patterns closed at the end of the crawl:",
        "No URL pattern is closed.",
    )
    ends = stats.get("frontier/ended_sequences")
    return html + _code_list(ends, "Numbered sequences ended (larger numbers refused):", "")


def _code_list(entries: list[str] | None, title: str, empty: str) -> str:
    if not entries:
        return f'<p class="sub">{empty}</p>' if empty else ""
    items = "".join(f"<li><code>{_e(e)}</code></li>" for e in entries)
    return f"<p>{title}</p><ul>{items}</ul>"


def error_rows(stats: dict[str, Any]) -> list[tuple[str, float]]:
    rows = _prefixed(stats, "fetch/errors/", "")
    dns = float(stats.get("frontier/dns/failed", 0))
    return [*rows, ("dns (frontier resolution)", dns)] if dns else rows
