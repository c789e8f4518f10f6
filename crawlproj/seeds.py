"""Seeds from `-a seeds=FILE` (one URL per line, # comments) or `-a seeds=URL1,URL2`."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)


class SeedError(ValueError):
    """No usable seed: the message is one line saying what to fix."""


@dataclass(frozen=True)
class SeedLine:
    url: str
    line_no: int  # 1-based line in the seeds file; 0 for a command-line URL


def seed_problem(url: str) -> str | None:
    """Why `url` cannot be a seed, or None when it can."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "only http:// and https:// URLs can be seeds"
    if not parts.hostname:
        return "no host name"
    if any(ch.isspace() for ch in url):
        return "contains white space"
    return None


def read_seed_arg(arg: str | None, *, report: bool = True) -> list[SeedLine]:
    """Every valid seed; bad lines are logged (`report`) with their line number and skipped."""
    if not arg:
        raise SeedError("no seeds: run with -a seeds=FILE or -a seeds=URL1,URL2")
    path = Path(arg).expanduser()
    if path.is_file():
        candidates = _file_lines(path)
        where = str(path)
    elif "://" in arg:
        candidates = [(0, item.strip()) for item in arg.split(",") if item.strip()]
        where = "-a seeds"
    else:
        raise SeedError(f"seeds file {arg} does not exist (pass a file or http(s) URLs)")
    seeds: list[SeedLine] = []
    for line_no, url in candidates:
        problem = seed_problem(url)
        if problem:
            if not report:
                continue
            label = f"{where}:{line_no}" if line_no else where
            logger.error("Skipping seed %s %r: %s", label, url, problem)
            continue
        seeds.append(SeedLine(url, line_no))
    if not seeds:
        raise SeedError(f"no valid seed URL in {where}")
    return seeds


def _file_lines(path: Path) -> list[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SeedError(f"cannot read seeds file {path}: {exc}") from None
    lines: list[tuple[int, str]] = []
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("#"):
            continue
        # An inline comment needs white space before '#': a bare '#' is a URL fragment.
        line = re.split(r"\s+#", line, maxsplit=1)[0].strip()
        if line:
            lines.append((line_no, line))
    return lines
