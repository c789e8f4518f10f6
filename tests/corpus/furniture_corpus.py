"""Labelled furniture-variant corpus: the same long text in changing page furniture.

The near-duplicate corpus (neardup_corpus.py) has one site template and short
pages; this one is the other kind the crawler meets: long prose (1,000-6,000
words) on four kinds of site (a blog with a comment widget, a news page with
banner ads and related links, a documentation page with a sidebar and an "edit
this page" bar, and a layout of plain divs with meaningless class names whose
byline, counters and ad survive any extractor), each with its own markup, so
an extractor tuned to one layout does not pass by luck. For every base text
seven pages are rendered:

    base       the page as first seen
    ad         another advertisement in the ad slots
    footer     another footer (links, copyright year, a newsletter box)
    counter    the comment / view counters moved on
    timestamp  another "updated" date and time
    edit       ~2% of the words replaced, deleted or inserted (neardup_corpus.edit_words)
    all        all of the above at once (with its own edits)

Positive pairs are any two pages of one base; negative pairs are pages of
different bases. Base texts come from the same prose stream as the other
corpus but are cut at other lengths (and with another seed), so the two
corpora share no document boundaries.
"""

from __future__ import annotations

import html
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, replace

from tests.corpus.neardup_corpus import ADS, Page, base_paragraphs, edit_words

SEED = 20261201
MIN_WORDS = 1000
MAX_WORDS = 6000
BASES = 48
VARIANTS = ("base", "ad", "footer", "counter", "timestamp", "edit", "all")
SITES = ("blog", "news", "docs", "plain")

FOOTERS: tuple[str, ...] = (
    "About us · Contact · Careers · Privacy policy · Terms of service · Cookie settings",
    "Subscribe to our weekly newsletter: the best articles, no spam, unsubscribe anytime.",
    "Made with care by a small team of writers and editors. Follow us on Mastodon and RSS.",
    "Copyright notice: all articles may be shared with attribution. Hosting sponsored by a "
    "friendly cloud provider. Report a problem with this page.",
)
AUTHORS = ("Ana Ruiz", "Tom Becker", "Li Wei", "Sara Okafor", "Jan de Vries", "Mia Rossi")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


@dataclass(frozen=True)
class Furniture:
    """Everything on a page that is not its text."""

    ad: str
    footer: str
    comments: int
    views: int
    updated: str


def _updated(rng: random.Random) -> str:
    return (
        f"{rng.randint(1, 28)} {rng.choice(_MONTHS)} {rng.randint(2018, 2026)}, "
        f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}"
    )


def _furniture(rng: random.Random) -> Furniture:
    return Furniture(
        rng.choice(ADS), rng.choice(FOOTERS), rng.randint(0, 300), rng.randint(100, 90000),
        _updated(rng),
    )  # fmt: skip


def _vary(base: Furniture, variant: str, rng: random.Random) -> Furniture:
    out = base
    if variant in ("ad", "all"):
        out = replace(out, ad=rng.choice([a for a in ADS if a != base.ad]))
    if variant in ("footer", "all"):
        out = replace(out, footer=rng.choice([f for f in FOOTERS if f != base.footer]))
    if variant in ("counter", "all"):
        out = replace(out, comments=base.comments + rng.randint(1, 9),
                      views=base.views + rng.randint(10, 900))  # fmt: skip
    if variant in ("timestamp", "all"):
        out = replace(out, updated=_updated(rng))
    return out


def _paras(paragraphs: list[str]) -> str:
    return "".join(f"<p>{html.escape(p)}</p>" for p in paragraphs)


def _blog(title: str, paragraphs: list[str], f: Furniture, author: str) -> str:
    half = len(paragraphs) // 2
    comments = "".join(
        f"<li class='comment'><b>reader{i}</b> <span>{f.comments - i} likes</span>"
        "<p>Thanks, this was useful.</p></li>"
        for i in range(3)
    )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} | A Blog</title></head><body>"
        "<div id='top'><a href='/'>A Blog</a> <a href='/archive'>Archive</a> "
        "<a href='/about'>About</a></div><div id='content'><div class='post'>"
        f"<h1>{html.escape(title)}</h1><div class='byline'>By {author} · "
        f"updated {f.updated} · {f.views} views</div>"
        f"<div class='entry'>{_paras(paragraphs[:half])}"
        f"<div class='ad-box'><small>Advertisement</small><p>{html.escape(f.ad)}</p></div>"
        f"{_paras(paragraphs[half:])}</div>"
        "<div class='share'>Share: Twitter · Facebook · LinkedIn · Email</div></div>"
        f"<div id='comments'><h3>{f.comments} comments</h3><ul>{comments}</ul>"
        "<form><textarea name='c'></textarea><button>Post</button></form></div></div>"
        f"<div id='bottom'><p>{html.escape(f.footer)}</p></div></body></html>"
    )


def _news(title: str, paragraphs: list[str], f: Furniture, author: str) -> str:
    related = "".join(f"<li><a href='/n/{i}'>Related story number {i}</a></li>" for i in range(5))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body>"
        f"<div class='banner-ad'>{html.escape(f.ad)}</div>"
        "<header><nav><a href='/'>Front page</a> <a href='/world'>World</a> "
        "<a href='/tech'>Tech</a> <a href='/opinion'>Opinion</a></nav></header>"
        "<main><article><div class='breadcrumbs'>Home &rsaquo; Tech &rsaquo; Explainers</div>"
        f"<h1>{html.escape(title)}</h1><p class='dateline'>{author}, last updated "
        f"{f.updated}</p><p class='counts'>{f.comments} comments · read {f.views} times</p>"
        f"{_paras(paragraphs)}</article>"
        f"<aside><h2>Related</h2><ul>{related}</ul><div class='sponsored'>{html.escape(f.ad)}"
        "</div></aside></main>"
        f"<footer><p>{html.escape(f.footer)}</p></footer></body></html>"
    )


def _docs(title: str, paragraphs: list[str], f: Furniture, author: str) -> str:
    toc = "".join(f"<li><a href='/doc/{i}'>Chapter {i}</a></li>" for i in range(1, 9))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)} — Manual</title></head><body>"
        "<div class='related'><a href='/genindex'>index</a> | <a href='/next'>next</a></div>"
        f"<div class='sphinxsidebar'><h3>Contents</h3><ul>{toc}</ul>"
        f"<div class='promo'>{html.escape(f.ad)}</div></div>"
        "<div class='document'><div class='body' role='main'>"
        f"<h1>{html.escape(title)}</h1>{_paras(paragraphs)}</div></div>"
        f"<div class='edit-bar'>Edit this page · {f.comments} open issues · "
        f"{f.views} page views</div>"
        f"<div class='footer'>{html.escape(f.footer)} Last updated on {f.updated} by "
        f"{author}.</div></body></html>"
    )


def _plain(title: str, paragraphs: list[str], f: Furniture, author: str) -> str:
    """A layout whose furniture has no telling names (hashed CSS-module classes,
    plain divs): whatever survives extraction the fingerprint must tolerate."""
    third = max(1, len(paragraphs) // 3)
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title></head><body><div class='c9x2'>"
        f"<div class='k1q'><b>{html.escape(title)}</b></div>"
        f"<div class='p0z'>{author} | {f.updated} | {f.views} readers | {f.comments} replies</div>"
        f"<div class='t4m'>{_paras(paragraphs[:third])}"
        f"<div class='w8v'><p>{html.escape(f.ad)}</p></div>"
        f"{_paras(paragraphs[third:])}</div>"
        f"<div class='z3b'><p>{html.escape(f.footer)}</p></div></div></body></html>"
    )


RENDERERS: dict[str, Callable[[str, list[str], Furniture, str], str]] = {
    "blog": _blog,
    "news": _news,
    "docs": _docs,
    "plain": _plain,
}


def _target_length(rng: random.Random) -> int:
    return int(MIN_WORDS * math.exp(math.log(MAX_WORDS / MIN_WORDS) * rng.random()))


def build_corpus(seed: int = SEED, bases: int = BASES) -> list[Page]:
    """bases x 7 pages; Page.base numbers the base text, Page.variant names the change."""
    rng = random.Random(seed)
    texts = base_paragraphs(rng, _target_length, MAX_WORDS)[:bases]
    pages: list[Page] = []
    for i, paragraphs in enumerate(texts):
        site = SITES[i % len(SITES)]
        title = " ".join(paragraphs[0].split()[:7])
        author = AUTHORS[i % len(AUTHORS)]
        furniture = _furniture(rng)
        for variant in VARIANTS:
            text = paragraphs
            if variant in ("edit", "all"):
                text = edit_words(paragraphs, rng)
            looks = furniture if variant == "base" else _vary(furniture, variant, rng)
            pages.append(Page(i, variant, RENDERERS[site](title, text, looks, author)))
    return pages


# ------------------------------------------------------------- edits over time

CHANGES = ("sentence", "section", "furniture", "none")
NEW_SENTENCE = "A note added in this revision explains the caveat in one sentence."


def revisions(index: int, change: str, site: str, seed: int = SEED) -> tuple[str, str]:
    """Two revisions (first fetch, re-fetch) of base text `index` on a site
    layout: the re-fetch gains one sentence, a ~300-word section, new furniture
    only (ad, footer, counters, date), or nothing."""
    rng = random.Random(seed * 31 + index)
    texts = base_paragraphs(random.Random(seed), _target_length, MAX_WORDS)
    paragraphs = texts[index % len(texts)]
    other = texts[(index + 1) % len(texts)]
    title = " ".join(paragraphs[0].split()[:7])
    author = AUTHORS[index % len(AUTHORS)]
    furniture = _furniture(rng)
    later, looks = list(paragraphs), furniture
    middle = len(later) // 2
    if change == "sentence":
        later[middle] = f"{later[middle]} {NEW_SENTENCE}"
    elif change == "section":
        section = " ".join(" ".join(other).split()[:300])
        later.insert(middle, section)
    elif change == "furniture":
        looks = _vary(furniture, "all", rng)
    render = RENDERERS[site]
    return render(title, paragraphs, furniture, author), render(title, later, looks, author)
