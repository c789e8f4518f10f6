"""Labelled near-duplicate corpus built offline from prose shipped with Python.

Base documents are 300-3000 words of real English prose: the language
reference in ``pydoc_data.topics`` followed by the docstrings of a fixed list
of standard-library modules (both ship with every CPython 3.11). The stream of
paragraphs is de-duplicated (the reference repeats whole sections under several
topics) and cut into documents; a document sharing more than 5% of its 8-word
shingles with an earlier one is dropped, so that two bases are never near
duplicates of each other. Distinct bases on the same subject (two sections of
the reference) are the hard negatives.

Every base is rendered as an HTML page of one site (same nav/header/footer
chrome, an ad slot, a comment counter) and six variants are derived from it:
a timestamp line, a swapped ad, an added site-info block, the comment counter
bumped, ~2% of words edited, and all of these at once (with other edits).
Positive pairs are any two of the 7 pages of one base; negative pairs are any
two pages of different bases. Evaluation uses every pair.

``python -m tests.corpus.evaluate`` prints precision and recall over thresholds
on this corpus and the others (tests/corpus/evaluate.py).
"""

from __future__ import annotations

import functools
import html
import importlib
import inspect
import json
import math
import random
import re
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass

MIN_WORDS = 300
MAX_WORDS = 3000
SEED = 20240517
SKEW = 1.5
VARIANTS = ("base", "timestamp", "ad", "footer", "counter", "edits", "all")

# Modules chosen for long docstrings, importable on any CPython 3.11 build and
# free of deprecation warnings and import-time side effects. Order matters: it
# fixes the paragraph stream, hence the corpus.
STDLIB_MODULES: tuple[str, ...] = (
    "typing", "doctest", "inspect", "builtins", "statistics", "difflib", "uuid",
    "logging", "pdb", "ast", "os", "io", "shutil", "argparse", "re", "sys",
    "socketserver", "subprocess", "json", "codecs", "optparse", "configparser",
    "time", "pkgutil", "math", "socket", "pickletools", "traceback", "base64",
    "fileinput", "platform", "random", "wave", "tempfile", "array", "itertools",
    "smtplib", "pydoc", "ftplib", "collections", "threading", "shelve",
    "ipaddress", "textwrap", "tokenize", "imaplib", "py_compile", "enum",
    "dataclasses", "locale", "timeit", "tarfile", "gc", "functools", "contextlib",
    "heapq", "bisect", "zipfile", "email.message", "http.client", "urllib.parse",
    "urllib.request", "string", "struct", "fractions", "datetime", "calendar",
    "pathlib", "glob", "csv", "unittest.case", "abc", "operator", "copy", "pprint",
    "weakref", "queue", "sched", "selectors", "hashlib", "hmac", "secrets",
    "gettext", "shlex", "trace", "pstats", "dis", "html.parser", "mailbox",
    "mimetypes", "plistlib", "filecmp", "numbers", "graphlib", "concurrent.futures",
    "http.server", "http.cookiejar", "xml.dom.minidom", "zipimport", "quopri",
    "modulefinder", "runpy", "compileall", "netrc", "getpass", "code", "codeop",
    "bdb", "cmd", "profile", "linecache", "reprlib", "stat", "keyword", "symtable",
    "binascii", "zlib", "bz2", "lzma", "gzip", "decimal", "poplib", "smtplib",
    "email.utils", "email.headerregistry", "email.policy", "urllib.robotparser",
    "xml.etree.ElementTree", "xmlrpc.client", "multiprocessing.pool",
    "multiprocessing.managers", "asyncio.events", "asyncio.tasks", "asyncio.streams",
    "importlib.metadata", "importlib.resources", "contextvars", "signal", "errno",
    "logging.handlers", "xml.dom", "webbrowser", "xmlrpc.server", "wsgiref.handlers",
    "asyncio.base_events", "asyncio.locks", "email.charset", "importlib.abc",
    "logging.config", "unicodedata", "asyncio.protocols", "asyncio.transports",
    "collections.abc", "getopt", "email.header", "wsgiref.validate", "http.cookies",
    "email.quoprimime", "select", "asyncio.queues", "pyclbr", "marshal", "json.encoder",
    "wsgiref.headers", "rlcompleter", "sysconfig", "multiprocessing.shared_memory",
    "importlib.util", "cmath", "email.base64mime", "ssl", "site",
)  # fmt: skip

ADS: tuple[str, ...] = (
    "Sponsored: Deploy your Python apps in seconds with CloudNimbus. Autoscaling, "
    "managed databases and zero-downtime releases. Start free today, no credit card "
    "required, and get priority support for your first month.",
    "Advertisement: Learn data engineering from working professionals. Our twelve week "
    "online bootcamp covers pipelines, warehouses and streaming. Enroll before Friday "
    "to save on tuition.",
    "Sponsored: Tired of flaky tests? TestPilot runs your suite in parallel across "
    "hundreds of machines and pinpoints the commit that broke the build. Try it on your "
    "open source project for free.",
    "Advertisement: The ergonomic split keyboard loved by developers. Hot-swappable "
    "switches, programmable layers and a wrist rest included. Free shipping on all "
    "orders this week.",
    "Sponsored: Monitor every request with TraceLens. Distributed tracing, error "
    "grouping and performance dashboards that your whole team will actually read. "
    "Book a demo with our engineers.",
    "Advertisement: Upgrade your home office with a standing desk that remembers your "
    "favourite heights. Quiet dual motors, a ten year warranty and a hundred night "
    "trial.",
    "Sponsored: Secure your secrets with VaultKeep. Rotate credentials automatically, "
    "audit every access and integrate with the tools you already use. Free for small "
    "teams.",
    "Advertisement: Conference season is here. Join thousands of developers for three "
    "days of talks, workshops and sprints in Lisbon. Early bird tickets are nearly "
    "gone.",
    "Sponsored: Ship mobile apps faster with a single codebase. Native performance, "
    "hot reload and a component library designed by professionals. Download the "
    "starter kit now.",
    "Advertisement: Noise cancelling headphones built for deep work. Forty hours of "
    "battery, multipoint pairing and a fold-flat case. Members save an extra fifteen "
    "percent.",
)

SITE_INFO = (
    "Python Notes is an independent site maintained by volunteers. Content is available "
    "under a Creative Commons licence unless otherwise noted. Report an error, suggest an "
    "improvement or read our privacy policy and terms of use."
)

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = ("January", "March", "May", "July", "September", "November")


@dataclass(frozen=True)
class Page:
    base: int
    variant: str
    html: str


# --------------------------------------------------------------------- sources


def _paragraphs(text: str) -> Iterator[str]:
    for block in re.split(r"\n\s*\n", text):
        words = block.split()
        # Drop reST underlines ("*****") and tiny fragments (headings, "Added in").
        if len(words) >= 8 and not re.fullmatch(r"[*=\-~^]+", words[0]):
            yield " ".join(words)


def _module_docs(name: str) -> list[str]:
    # Importing and walking some modules warns (typing.io, typing.re...): noise.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(_walk_module_docs(name))


def _walk_module_docs(name: str) -> Iterator[str]:
    try:
        module = importlib.import_module(name)
    except ImportError:  # a stripped-down build: the corpus just shrinks
        return
    yield inspect.cleandoc(module.__doc__ or "")
    for attr, obj in sorted(vars(module).items()):
        # Private helpers are documented in prose too; dunders are boilerplate.
        if attr.startswith("__") or getattr(obj, "__module__", None) != module.__name__:
            continue
        # __doc__ not inspect.getdoc: getdoc inherits docs, which would repeat them.
        doc = getattr(obj, "__doc__", None)
        if isinstance(doc, str):
            yield inspect.cleandoc(doc)
        if inspect.isclass(obj):
            for member, value in sorted(vars(obj).items()):
                doc = getattr(value, "__doc__", None)
                if not member.startswith("__") and isinstance(doc, str):
                    yield inspect.cleandoc(doc)


def _source_texts() -> Iterator[str]:
    from pydoc_data.topics import topics

    for key in sorted(topics):
        yield topics[key]
    for name in STDLIB_MODULES:
        yield from _module_docs(name)


@functools.cache
def paragraph_stream() -> list[str]:
    """Every distinct prose paragraph of the sources, in a fixed order.

    Collected in a fresh ``python -S -E`` child: in-process, whatever the caller
    imported before (pytest plugins, third-party packages patching the stdlib)
    changes which members modules have, hence the corpus.
    """
    out = subprocess.run(
        [sys.executable, "-S", "-E", __file__, "--paragraphs"],
        capture_output=True,
        check=True,
        text=True,
        encoding="utf-8",
    ).stdout
    return list(json.loads(out))


def _collect_paragraphs() -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for text in _source_texts():
        for para in _paragraphs(text):
            if para not in seen:
                seen.add(para)
                out.append(para)
    return out


def _shingle_set(paragraphs: list[str], k: int = 8) -> set[str]:
    # Strings, not hash(): str hashes are salted per process and the corpus
    # must come out identical in every run.
    words = " ".join(paragraphs).lower().split()
    return {" ".join(words[i : i + k]) for i in range(len(words) - k + 1)}


def base_documents(rng: random.Random) -> list[list[str]]:
    """Cut the paragraph stream into documents of 300-3000 words (log-uniform)."""
    return base_paragraphs(rng, _target_length, MAX_WORDS)


def base_paragraphs(
    rng: random.Random, target_length: Callable[[random.Random], int], max_words: int
) -> list[list[str]]:
    """Cut the paragraph stream into documents of target_length(rng) words (each
    at most max_words); a document sharing more than 5% of its 8-word shingles
    with an earlier one is dropped, so no two are near duplicates."""
    docs: list[list[str]] = []
    seen: set[str] = set()
    current: list[str] = []
    count, target = 0, target_length(rng)
    for para in paragraph_stream():
        current.append(para)
        count += len(para.split())
        if count < target:
            continue
        if count <= max_words:
            shingles = _shingle_set(current)
            if len(shingles & seen) <= 0.05 * len(shingles):
                docs.append(current)
                seen |= shingles
        current, count, target = [], 0, target_length(rng)
    return docs


def _target_length(rng: random.Random) -> int:
    # log(length) ~ log(300) + log(10) * u**2: median ~530 words, mean ~800,
    # a long tail to 3000. Short pages are the hard case (a swapped ad is a
    # bigger share of them), and the web has more of them than of long ones.
    u = rng.random() ** SKEW
    return int(MIN_WORDS * math.exp(math.log(MAX_WORDS / MIN_WORDS) * u))


# --------------------------------------------------------------------- variants


@dataclass
class _Spec:
    paragraphs: list[str]
    ad: str
    comments: int
    timestamp: str | None = None
    site_info: bool = False


def _timestamp(rng: random.Random) -> str:
    return (
        f"Last updated on {rng.choice(_WEEKDAYS)}, {rng.randint(1, 28)} "
        f"{rng.choice(_MONTHS)} {rng.randint(2019, 2025)} at "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} UTC"
    )


def edit_words(paragraphs: list[str], rng: random.Random, rate: float = 0.02) -> list[str]:
    """Replace, delete or insert ~rate of the words (typo fixes, rewording)."""
    words = [p.split() for p in paragraphs]
    vocab = [w for p in words for w in p]
    n_edits = max(1, round(rate * len(vocab)))
    for _ in range(n_edits):
        para = rng.choice([p for p in words if p])
        i = rng.randrange(len(para))
        op = rng.randrange(3)
        if op == 0:
            para[i] = rng.choice(vocab)
        elif op == 1 and len(para) > 1:
            del para[i]
        else:
            para.insert(i, rng.choice(vocab))
    return [" ".join(p) for p in words]


def _variant_spec(base: _Spec, variant: str, rng: random.Random) -> _Spec:
    spec = _Spec(list(base.paragraphs), base.ad, base.comments)
    if variant in ("timestamp", "all"):
        spec.timestamp = _timestamp(rng)
    if variant in ("ad", "all"):
        spec.ad = rng.choice([ad for ad in ADS if ad != base.ad])
    if variant in ("footer", "all"):
        spec.site_info = True
    if variant in ("counter", "all"):
        spec.comments += rng.randint(1, 3)
    if variant in ("edits", "all"):
        spec.paragraphs = edit_words(spec.paragraphs, rng)
    return spec


def render_page(title: str, spec: _Spec) -> str:
    """One page of the 'Python Notes' site; chrome is what the extractors strip."""
    esc = html.escape
    body = [f"<p>{esc(p)}</p>" for p in spec.paragraphs]
    # The ad sits in the article flow, as real ad slots do, so it survives extraction.
    body.insert(min(2, len(body)), f'<div class="promo"><p>{esc(spec.ad)}</p></div>')
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{esc(title)}</title><style>body{{font:16px sans-serif}}</style>",
        "<script>window.dataLayer=window.dataLayer||[];</script></head><body>",
        "<header><a href='/'>Python Notes</a><form><input name='q'></form></header>",
        "<nav><a href='/'>Home</a> <a href='/ref'>Reference</a> <a href='/lib'>Library</a>",
        "</nav><main><article>",
        f"<h1>{esc(title)}</h1>",
        f"<p class='updated'>{esc(spec.timestamp)}</p>" if spec.timestamp else "",
        f"<p class='meta'>{spec.comments} comments</p>",
        *body,
        "</article>",
        f"<div class='site-info'><p>{esc(SITE_INFO)}</p></div>" if spec.site_info else "",
        "</main><aside><h2>Related</h2><ul><li>Tutorial</li><li>FAQ</li></ul></aside>",
        "<footer>&copy; Python Notes. All rights reserved.</footer>",
        "<!-- rendered by notes-cms --><script>track('pageview')</script></body></html>",
    ]
    return "".join(parts)


def build_corpus(seed: int = SEED) -> list[Page]:
    """All pages: for every base document, the base page and its six variants."""
    rng = random.Random(seed)
    pages: list[Page] = []
    for i, paragraphs in enumerate(base_documents(rng)):
        title = " ".join(paragraphs[0].split()[:8])
        base = _Spec(paragraphs, ADS[i % len(ADS)], rng.randint(0, 500))
        for variant in VARIANTS:
            spec = base if variant == "base" else _variant_spec(base, variant, rng)
            pages.append(Page(i, variant, render_page(title, spec)))
    return pages


if __name__ == "__main__":
    # The child process of paragraph_stream(); the sweep is tests/corpus/evaluate.py.
    sys.stdout.reconfigure(encoding="utf-8")  # type: ignore[union-attr]
    json.dump(_collect_paragraphs(), sys.stdout)
