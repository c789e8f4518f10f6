"""Soft-404s: a host that answers 200 for pages that do not exist, and how to tell.

Why: such a host turns every broken link into a "page", and a not-found page
that links random paths (or echoes the requested one into its links) is an
infinite trap. As archival crawlers do, the crawl asks each origin once for a
path that cannot exist (``probe_url``) and remembers what the answer looks
like (``learn``); a later page near that answer is a soft-404 (``judge``).

The answer is compared by its words, not a simhash: not-found pages are short
(a simhash of under 50 words is noise, see NEARDUP_MIN_WORDS), and what varies
between two of them is a handful of words (the echoed path, a few random
links), which a word-set Jaccard tolerates at any length. Two things would
drown that signal, so they are taken out first:

- the URL's own words (``/no-such-page`` echoed as "no such page"): each page
  loses the words of its own requested path;
- the site's furniture: on a layout of plain ``<div>``s a short page's text is
  mostly menu and footer (main_text.py falls back to the visible text), so a
  contact page and the not-found page would share 90% of their words. The
  page that made the crawl probe the host (its first 200 HTML page) is the
  reference: words the probe's answer shares with it are furniture, and both
  sides are compared without them.

An answer with fewer than MIN_OWN_WORDS words of its own (the host serves its
home page, or an app shell, for every path) cannot be told from a real page
by its text, nor can the home page be missing: the root is never a soft-404.
Its bytes can: a page whose body is the answer's, byte for byte (content_hash),
is a soft-404 wherever it is not the root (a single-page app's server answers
every unknown path with index.html). Such a page is an exact duplicate too; the
verdict adds what a duplicate does not say: the row says soft_404, and trap
feedback learns a numbered sequence's end from it (/page/132 past the last page).

Template rule: a not-found page may carry words of its own on every answer
(suggested posts, excerpts, searches, random "related" links), which drown the
word-set Jaccard. So an origin whose probe answered 200 with text is probed a
second time, and the answer's template is what both answers say: their shared
phrases (PHRASE_WORDS-word shingles), without the reference page's (furniture).
A page containing at least SOFT404_MIN_CONTAINMENT of the template's phrases is a
soft-404, whatever else it says; a real page shares a phrase or two with it at
most. Until the second answer is in, the word rule alone judges.

Redirect rule: when the probe was redirected (unknown paths 302 to the home
page or to /404.html), a page redirected from another path to the same final
URL is a soft-404 when its content is already held by an earlier page (a
duplicate). The first copy is kept: the frontier admits a redirect target as
that URL's fetch (URL-seen), so it may be the only fetch of the home page. The
answer's text is not used then: it is the target page's.

The thresholds were chosen on tests/unit/content/soft404_pages.py: six kinds
of not-found page on three site layouts against short real pages of the same
sites (contact, tag, about pages); the test prints the margins.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import secrets
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from extensions.content.fingerprint import tokens
from extensions.content.main_text import page_text
from extensions.content.visible_text import visible_text

PROBE_SUFFIX = "-crawlproj-probe"
# response.meta of the page whose origin the spider is to probe (set by the pipeline
# that claimed the origin).
SEND_PROBE_META = "soft404_send_probe"
# meta of a probe request that is its origin's second (the template rule).
SECOND_PROBE_META = "soft404_second_probe"
# Distinct words kept of a page or an answer: a not-found page is short, and a page
# longer than this is far from one whatever its other words.
MAX_WORDS = 2000
# Of the reference page: every furniture word matters, the footer's last ones too.
MAX_REFERENCE_WORDS = 5000
# Words of its own (not shared with the reference page) the probe's answer needs
# before its text can mark pages; fewer: the redirect rule only.
MIN_OWN_WORDS = 2
_DIGIT = re.compile(r"\d")
# Words per phrase of the template rule, and the phrases kept of a page (first ones).
PHRASE_WORDS = 3
MAX_PHRASES = 4000
# Phrases a template needs before it marks pages (fewer: the answers share too little).
MIN_TEMPLATE_PHRASES = 8

Words = frozenset[str]
# 8-hex-digit hashes of phrases (compact in the shared state), distinct, in text order.
Phrases = tuple[str, ...]


def origin_of(url: str) -> str:
    """scheme://host[:port] of a URL: what a probe answers for."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def probe_url(url: str) -> str:
    """A path on url's origin that no site has: 16 random hex digits + PROBE_SUFFIX."""
    return f"{origin_of(url)}/{secrets.token_hex(8)}{PROBE_SUFFIX}"


def url_words(url: str) -> Words:
    """Words of a URL's path and query (a template echoing the path shows them)."""
    parts = urlsplit(url)
    return frozenset(tokens(unquote(f"{parts.path} {parts.query}")))


def page_words(html: str | bytes, requested_url: str) -> Words:
    """What a page says, as compared here: its main text's distinct words (the
    visible text's where the main text is too short), without its URL's words."""
    return text_words(page_text(html).text, requested_url)


def text_words(text: str, requested_url: str) -> Words:
    """page_words from the page's page_text, when the caller has it already."""
    return _distinct(tokens(text), MAX_WORDS) - url_words(requested_url)


def reference_words(html: str | bytes, url: str) -> Words:
    """Every word a reader sees on a real page of the origin: its main text and its
    visible text, furniture and all (short pages are compared by their visible text)."""
    return reference(page_text(html).text, html, url)[0]


def reference(main_text: str, html: str | bytes, url: str) -> tuple[Words, Phrases]:
    """A real page's words (reference_words) and phrases (its main text's, then its
    visible text's other ones), from its main text (the caller's, extracted once) and
    its visible text."""
    visible = visible_text(html)
    words = _distinct(tokens(main_text) + tokens(visible), MAX_REFERENCE_WORDS) - url_words(url)
    main = text_phrases(main_text)
    return words, main + tuple(set(text_phrases(visible)) - set(main))


def _distinct(words: list[str], cap: int) -> Words:
    """Distinct words without digits, the first `cap` of them: what differs between
    two answers of one not-found template is mostly request ids, times and counters."""
    distinct = [w for w in dict.fromkeys(words) if not _DIGIT.search(w)]
    return frozenset(distinct[:cap])


def text_phrases(text: str, requested_url: str = "") -> Phrases:
    """The distinct PHRASE_WORDS-word phrases of a text, hashed, in text order: what the
    template rule compares (the first MAX_PHRASES of them). Numbers read as "#", and a
    run of two or more of the requested URL's words as one "@" (the echoed path:
    "could not find @" whatever it was; one such word alone is a word of the text)."""
    echoed = url_words(requested_url) if requested_url else frozenset()
    words: list[str] = []
    run: list[str] = []  # the current run of the URL's words
    for w in [*tokens(text), ""]:
        if w and w in echoed:
            run.append(w)
            continue
        words += ["@"] if len(run) > 1 else [_number_as_hash(r) for r in run]
        run = []
        if w:
            words.append(_number_as_hash(w))
    out: dict[str, None] = {}
    for i in range(len(words) - PHRASE_WORDS + 1):
        phrase = " ".join(words[i : i + PHRASE_WORDS]).encode()
        out[hashlib.blake2b(phrase, digest_size=4).hexdigest()] = None
        if len(out) >= MAX_PHRASES:
            break
    return tuple(out)


def _number_as_hash(word: str) -> str:
    return "#" if _DIGIT.search(word) else word


@dataclass(frozen=True)
class NotFoundPrint:
    """What the origin's answer to a path that cannot exist looks like."""

    final_url: str  # where the probe was redirected to; "" when it answered in place
    own: Words  # the answer's words the reference page does not have
    furniture: Words  # the answer's words the reference page has too
    body_hash: str = ""  # content_hash of the answer's body ("" when redirected)
    # The first answer's phrases, furniture left out, awaiting the second probe's answer.
    pending: Phrases = ()
    template: Phrases = ()  # the phrases both answers have, in the first one's order

    @property
    def by_text(self) -> bool:
        """The answer has enough words of its own to recognise pages by."""
        return len(self.own) >= MIN_OWN_WORDS

    @property
    def by_template(self) -> bool:
        return len(self.template) >= MIN_TEMPLATE_PHRASES

    def containment(self, phrases: frozenset[str]) -> float:
        """The share of the template's phrases a page has, or of its opening tenth if
        less. The not-found message opens an answer; what may follow it (excerpts of
        the site's posts, its popular titles) a real page has too, but not the message."""
        template = self.template
        if not template:
            return 0.0
        opening = template[: max(len(template) // 10, MIN_TEMPLATE_PHRASES)]
        whole = sum(p in phrases for p in template) / len(template)
        return min(whole, sum(p in phrases for p in opening) / len(opening))

    def resemblance(self, words: Words) -> float:
        """Jaccard of a page's and the answer's words, furniture left out."""
        mine = words - self.furniture
        union = len(mine | self.own)
        return len(mine & self.own) / union if union else 0.0


def learn(
    answer: Words,
    reference: Words | None,
    final_url: str,
    body_hash: str = "",
    phrases: tuple[Phrases, Phrases] = ((), ()),
) -> NotFoundPrint:
    """The fingerprint of a probe's 200 answer; reference: the words of a real page
    of the origin (furniture is what both have). A redirected probe's answer is the
    page it was sent to, a real URL of the site (often the home page): its words
    and bytes would mark that page itself, so only the redirect rule is kept.
    Without a reference nothing tells the furniture apart: the answer's words stay
    unused (its bytes still mark exact copies). phrases: (the answer's, the reference
    page's), for the template rule: the answer's own ones wait for the second answer."""
    if final_url:
        return NotFoundPrint(final_url, frozenset(), frozenset())
    if reference is None:
        return NotFoundPrint("", frozenset(), answer, body_hash)
    furniture = answer & reference
    answer_phrases, seen = phrases[0], frozenset(phrases[1])
    pending = tuple(p for p in answer_phrases if p not in seen)
    return NotFoundPrint("", answer - furniture, furniture, body_hash, pending)


def learn_second(print_: NotFoundPrint, phrases: Phrases) -> NotFoundPrint:
    """The print with its template: what the second probe's answer shares with the first."""
    second = frozenset(phrases)
    template = tuple(p for p in print_.pending if p in second)
    return dataclasses.replace(print_, pending=(), template=template)


def judge(
    print_: NotFoundPrint,
    words: Words,
    requested_url: str,
    final_url: str,
    threshold: float,
    duplicate: bool,
    body_hash: str = "",
    phrases: tuple[frozenset[str], float] = (frozenset(), 1.0),
) -> bool:
    """A 200 page of the origin is a soft-404 (see the module docstring); duplicate:
    its content is held by an earlier page (duplicate_of); body_hash: its body's
    content_hash; phrases: its text_phrases and SOFT404_MIN_CONTAINMENT."""
    if _is_root(requested_url):
        # A host serving its home page for every path makes the home page look like
        # the answer (when the reference was another page); the root is never missing.
        return False
    if print_.body_hash and body_hash == print_.body_hash and not _is_root(final_url):
        return True  # the answer itself, byte for byte
    if print_.final_url:
        # The frontier admits a redirect target as that URL's own fetch: the first copy
        # reached this way is the target page itself (the home page...), to be kept.
        return duplicate and final_url == print_.final_url and requested_url != final_url
    if _is_root(final_url):
        return False  # the home page's content, reached by a redirect
    if print_.by_text and print_.resemblance(words) >= threshold:
        return True
    page_phrases, min_containment = phrases
    return print_.by_template and print_.containment(page_phrases) >= min_containment


def _is_root(url: str) -> bool:
    return urlsplit(url).path in ("", "/")
