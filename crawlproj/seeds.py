"""Seeds from `-a seeds=FILE` (one URL per line, # comments) or `-a seeds=URL1,URL2`.

A seed list is hand-made input: one bad line (not a URL, not UTF-8, longer than the
frontier admits) is logged with its line number and skipped, so it never costs the
other seeds or ends the crawl in a traceback. Only when no valid seed remains is
the argument refused (SeedError, one line saying what to fix).

A file line that is a host name without a scheme (`example.org`, `docs.example.org/en/`,
as lists of sites are often written) is crawled as http:// and logged as a WARNING with
its line number: http, because an https-only site redirects it there, while https on an
http-only site fails and loses the seed (Heritrix assumes http:// too). Only in a file:
on the command line `seeds.txt` misspelt would read as a host.
"""

from __future__ import annotations

import codecs
import logging
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from w3lib.url import safe_url_string

logger = logging.getLogger(__name__)

# Longer URLs are cut in the log line: one 100 KB line would drown the log.
_SHOWN_MAX_CHARS = 200
# A host name (dotted labels, or localhost) with an optional port, then a path or nothing:
# what a scheme-less seed line must start with to be taken as http://.
_BARE_HOST = re.compile(
    r"(?:localhost|(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z][A-Za-z0-9-]*)"
    r"\.?(?::[0-9]{1,5})?(?:[/?#].*)?"
)


class SeedError(ValueError):
    """No usable seed: the message is one line saying what to fix."""


@dataclass(frozen=True)
class SeedLine:
    url: str
    line_no: int  # 1-based line in the seeds file; 0 for a command-line URL


def seed_problem(url: str, max_length: int | None = None) -> str | None:
    """Why `url` cannot be a seed, or None when it can (scrapy.Request(url) builds).

    `max_length` is URL_MAX_LENGTH (None or 0: no limit). The frontier compares it
    with the canonical URL and drops a longer one without a log line; the URL as
    written is the closest a seed list can check.
    """
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:  # undecodable bytes, read with surrogateescape
        return "not UTF-8"
    if max_length and len(url) > max_length:
        return f"longer than URL_MAX_LENGTH={max_length}"
    try:
        # What scrapy.Request does to its URL: a seed that passes here builds there.
        parts = urlsplit(safe_url_string(url))
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "only http:// and https:// URLs can be seeds"
    if not parts.hostname:
        return "no host name"
    if any(ch.isspace() for ch in url):
        return "contains white space"
    if any(unicodedata.category(ch) == "Cc" for ch in url):
        return "contains control characters"
    return None


def read_seed_arg(
    arg: str | None, *, report: bool = True, max_length: int | None = None
) -> list[SeedLine]:
    """Every valid seed; bad lines are logged (`report`) with their line number and skipped.

    `max_length` is the crawl's URL_MAX_LENGTH (None or 0: no limit).
    """
    if not arg:
        raise SeedError("no seeds: run with -a seeds=FILE or -a seeds=URL1,URL2")
    where, candidates = _candidates(arg)
    seeds: list[SeedLine] = []
    for line_no, url in candidates:
        if line_no and "://" not in url and _BARE_HOST.fullmatch(url):
            url = "http://" + url
            if report:
                logger.warning("Seed %s:%d has no scheme: taken as %s", where, line_no, _shown(url))
        problem = seed_problem(url, max_length)
        if problem is None:
            seeds.append(SeedLine(url, line_no))
        elif report:
            label = f"{where}:{line_no}" if line_no else where
            logger.error("Skipping seed %s %r: %s", label, _shown(url), problem)
    if not seeds:
        raise SeedError(f"no valid seed URL in {where}")
    return seeds


def _candidates(arg: str) -> tuple[str, list[tuple[int, str]]]:
    """(where, candidate seeds): `arg` names URLs or a seeds file."""
    # URLs first, without asking the file system: a URL longer than the OS allows a
    # file name makes is_file() raise OSError ("File name too long").
    if "://" in arg:
        return "-a seeds", [(0, item.strip()) for item in arg.split(",") if item.strip()]
    path = Path(arg).expanduser()
    try:
        is_file = path.is_file()
    except OSError as exc:
        raise SeedError(f"seeds file {_shown(arg)} cannot be read: {exc.strerror}") from None
    if not is_file:
        raise SeedError(f"seeds file {arg} does not exist (pass a file or http(s) URLs)")
    return str(path), _file_lines(path)


def _file_lines(path: Path) -> list[tuple[int, str]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise SeedError(f"cannot read seeds file {path}: {exc}") from None
    lines: list[tuple[int, str]] = []
    # Bytes split on \n, \r\n and \r only: line numbers are the ones an editor shows.
    # Each line is decoded on its own: a bad byte keeps a lone surrogate, which
    # seed_problem reports for that line (a comment may hold any bytes).
    for line_no, raw in enumerate(data.removeprefix(codecs.BOM_UTF8).splitlines(), start=1):
        line = raw.decode("utf-8", "surrogateescape").strip()
        if line.startswith("#"):
            continue
        # An inline comment needs white space before '#': a bare '#' is a URL fragment.
        line = re.split(r"\s+#", line, maxsplit=1)[0].strip()
        if line:
            lines.append((line_no, line))
    return lines


def _shown(url: str) -> str:
    # repr() in the log line shows an undecodable byte 0xNN as \udcNN.
    return url if len(url) <= _SHOWN_MAX_CHARS else url[:_SHOWN_MAX_CHARS] + "..."
