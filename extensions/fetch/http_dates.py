"""Dates on the web, as epoch seconds: HTTP-dates (Last-Modified, Retry-After) and
sitemap <lastmod> (W3C datetime). Unparsable input gives None, never an exception:
these come from servers we do not control."""

from __future__ import annotations

import email.utils
from datetime import UTC, datetime
from typing import Any


def http_time(value: str) -> float | None:
    """Epoch seconds of an HTTP-date (RFC 9110 5.6.7), None when unparsable."""
    try:
        return email.utils.parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def w3c_time(value: Any) -> float | None:
    """Epoch seconds of a sitemap <lastmod> (W3C datetime: a date, or a date and time
    with a zone; a time without zone is taken as UTC), None when absent or unparsable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
