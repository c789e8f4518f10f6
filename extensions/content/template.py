"""Template pages: pages whose main text differs from another page's only in numbers
and in words their own URL supplies.

A trap's pages are one template filled from the URL: "Nothing is scheduled for 5 May
2024", "No results for 'red shoes'", "Gallery picture 12 of many". Body hashes and
near-duplicate sketches tell them apart (dates, echoed queries; most are too short for
a simhash), so trap feedback would count each as new content. The template digest
drops what the URL explains: digit runs become N, and every word that also occurs in
the page's URL is removed. Two pages with one digest are one template; the second one
is a duplicate for trap feedback (never for storage: its body is still kept).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import unquote_plus

_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
# Fewer words than this left after the URL's are removed: no template to speak of.
MIN_TEMPLATE_WORDS = 3


def template_digest(text: str, url: str) -> str | None:
    """16 hex chars naming the page's template, None for a page with almost no text."""
    echoed = {_DIGITS.sub("N", w) for w in _WORD.findall(unquote_plus(url).lower())}
    words = [
        w for w in (_DIGITS.sub("N", w) for w in _WORD.findall(text.lower())) if w not in echoed
    ]
    if len(words) < MIN_TEMPLATE_WORDS:
        return None
    return hashlib.blake2b(" ".join(words).encode(), digest_size=8).hexdigest()
