"""Template pages: pages whose main text differs from another page's only in numbers
and in words their own URL supplies.

A trap's pages are one template filled from the URL: "Nothing is scheduled for 5 May
2024", "No results for 'red shoes'", "Gallery picture 12 of many". Body hashes and
near-duplicate sketches tell them apart (dates, echoed queries; most are too short for
a simhash), so trap feedback would count each as new content. The template digest
drops what the URL explains: digit runs (and month and day names) become N, and every
word that also occurs in the page's URL is removed. Two pages with one digest are one
template; the second one is a duplicate for trap feedback (never for storage: its body
is still kept).
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import unquote_plus, urlsplit

_WORD = re.compile(r"\w+")
_DIGITS = re.compile(r"\d+")
# Dates are what a calendar's pages differ in: month and day names count as numbers.
_DATE_TEXT = (
    "january february march april may june july august september october november "
    "december jan feb mar apr jun jul aug sep sept oct nov dec monday tuesday wednesday "
    "thursday friday saturday sunday mon tue tues wed thu thur thurs fri sat sun"
)
_DATE_WORDS = frozenset(_DATE_TEXT.split())
# Fewer own words than this (but some): too little to tell a template from a page.
MIN_TEMPLATE_WORDS = 3


def template_digest(text: str, url: str) -> str | None:
    """16 hex chars naming the page's template; None for a page without words or with
    one or two of its own. A page whose every word its URL explains ("Calendar 2024-05"
    at /calendar/2024/05) has the empty template: nothing on it is its own."""
    # Digits and "N" are both word characters, so folding digit runs per word gives the
    # words of folding the whole text; only words that are not all letters can hold a
    # digit (str.isalpha), so the sub runs on those alone (a third of the digest's cost
    # on a 14 KB page went to a sub over the whole text). Date words are all letters.
    echoed = set(_WORD.findall(_DIGITS.sub("N", unquote_plus(url).lower())))
    all_words = [
        "N" if w in _DATE_WORDS else w if w.isalpha() else _DIGITS.sub("N", w)
        for w in _WORD.findall(text.lower())
    ]
    words = [w for w in all_words if w not in echoed]
    if not all_words or 0 < len(words) < MIN_TEMPLATE_WORDS:
        return None
    return hashlib.blake2b(" ".join(words).encode(), digest_size=8).hexdigest()


def blames(url: str, original: str) -> bool:
    """Whether a duplicate counts against `url`'s pattern. Not when the first copy was a
    longer spelling of this URL (a query variant or a deeper path reached first, e.g. a
    session id on every link): the trap is the original's pattern, not the clean one."""
    this, first = urlsplit(url), urlsplit(original)
    if first.query and not this.query and first.path == this.path:
        return False
    return not (len(first.path) > len(this.path) and first.path.startswith(this.path))
