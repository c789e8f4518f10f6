"""Labelled pages for the soft-404 measure: not-found answers and short real pages.

Three site layouts, each with its own furniture: ``semantic`` (header, nav,
aside and footer elements the extractors drop), ``wordpress`` (classes the
furniture list knows: site-header, widget-area, site-footer) and ``divs``
(plain divs with meaningless classes: the menu, a "latest posts" box and the
footer survive every extractor, so a short page is mostly furniture).

On each site, six kinds of not-found answer, rendered for any requested path:

    plain     "Page not found" and the requested path echoed
    links     the same with five links to random paths, anchored by random post titles
    noise     five links in a sentence, their anchors random tokens (a trap's generated names)
    ticket    a terse error with a per-request reference number, time and server name
    themed    a long themed page: apology, search hints, popular posts, categories
    suggest   "did you mean" naming the post whose title is closest to the path
    home      the home page itself, served for every path (no redirect)

and two that say something of their own on every answer, which only the template rule
(what two answers share) tells:

    chatty    the themed page plus two "you might like" suggestions of random words
    excerpts  the plain page plus excerpts of three of the site's own articles, picked
              at random per request (their sentences are real pages' sentences)

and real pages that must not be taken for them: the home page, two articles,
and the short ones: a contact page, two tag pages with two lines each, an
about page, an empty search page, and a "lost and found" notice whose few
words are a not-found page's ("nothing was found").
"""

from __future__ import annotations

import html
import random
from collections.abc import Callable

SITES = ("semantic", "wordpress", "divs")
KINDS = ("plain", "links", "noise", "ticket", "themed", "suggest", "home")
CHATTY_KINDS = ("chatty", "excerpts")
MISSING_PATHS = (
    "/blog/2019/05/an-old-post-that-moved",
    "/no-such-page",
    "/tag/kitchen-gardens?page=7",
    "/x9f3a2c1",
    "/docs/getting-started/install.html",
)

POSTS = (
    "Growing tomatoes on a small balcony",
    "Why our sourdough starter failed twice",
    "A weekend trip along the northern coast",
    "Repairing an old bicycle with basic tools",
    "The best soups for a cold winter evening",
    "Notes from the community garden meeting",
    "How we planned a vegetable bed rotation",
    "Reading list for long train journeys",
)
CATEGORIES = ("Garden", "Kitchen", "Travel", "Workshop", "Books")
ARTICLE = (
    "We started the season with three plants and a bag of compost from the market. "
    "The balcony faces west, so the afternoon sun is strong and the mornings are cool. "
    "After two weeks the seedlings had doubled in height, and we tied them to bamboo "
    "canes with soft string so the stems would not snap in the wind.",
    "Watering turned out to be the hardest part. Pots dry out quickly in July, and a "
    "plant that wilts once recovers, but its fruit splits when it drinks too fast "
    "afterwards. A cheap drip line with a timer solved most of it, and a saucer under "
    "each pot kept the water where the roots could reach it.",
    "By August the first fruit turned red. Not all of them were pretty, some cracked "
    "and one plant caught blight from a neighbour, but the taste was worth every "
    "evening spent pinching out side shoots. Next year we will try two varieties that "
    "stay compact and a second tray of basil between the pots.",
)


def _semantic(title: str, body: str) -> str:
    links = "".join(f"<li><a href='/p/{i}'>{html.escape(p)}</a></li>" for i, p in enumerate(POSTS))
    return (
        f"<html><head><title>{html.escape(title)} | Small Plot Journal</title></head><body>"
        "<header><a href='/'>Small Plot Journal</a><nav><a href='/'>Home</a> "
        "<a href='/blog'>Blog</a> <a href='/tags'>Tags</a> <a href='/contact'>Contact</a>"
        "</nav></header>"
        f"<main>{body}</main>"
        f"<aside><h2>Recent posts</h2><ul>{links}</ul></aside>"
        "<footer>Small Plot Journal, written in a shed since 2014. RSS feed. "
        "Privacy. All words are ours.</footer></body></html>"
    )


def _wordpress(title: str, body: str) -> str:
    links = "".join(f"<li><a href='/p/{i}'>{html.escape(p)}</a></li>" for i, p in enumerate(POSTS))
    cats = "".join(f"<li><a href='/c/{c.lower()}'>{c}</a></li>" for c in CATEGORIES)
    return (
        f"<html><head><title>{html.escape(title)} - Kitchen Table Notes</title></head>"
        "<body class='wp'><div class='site-header'><p class='site-title'>Kitchen Table "
        "Notes</p><div class='menu-main'><a href='/'>Home</a> <a href='/about'>About</a>"
        "</div></div><div id='primary' class='content-area'><div class='entry-content'>"
        f"{body}</div></div><div class='widget-area sidebar'><h3>Recent Posts</h3>"
        f"<ul>{links}</ul><h3>Categories</h3><ul>{cats}</ul></div><div class='site-footer'>"
        "Proudly powered by a blogging engine. Theme by a friend of ours.</div>"
        "</body></html>"
    )


def _divs(title: str, body: str) -> str:
    links = "".join(
        f"<div class='r'><a href='/p/{i}'>{html.escape(p)}</a></div>"
        for i, p in enumerate(POSTS[:5])
    )
    return (
        f"<html><head><title>{html.escape(title)}</title></head><body>"
        "<div class='t1'><b>Northern Coast Walkers</b> · <a href='/'>Start</a> · "
        "<a href='/walks'>Walks</a> · <a href='/members'>Members</a> · "
        "<a href='/contact'>Write to us</a> · <a href='/join'>Join the club</a></div>"
        f"<div class='t2'>{body}</div>"
        f"<div class='t3'><b>Latest from the club</b>{links}</div>"
        "<div class='t4'>Northern Coast Walkers is a volunteer club. Meetings every "
        "second Tuesday at the old harbour office. Maps are drawn by members and may be "
        "out of date; walk at your own risk.</div></body></html>"
    )


SITE_RENDER: dict[str, Callable[[str, str], str]] = {
    "semantic": _semantic,
    "wordpress": _wordpress,
    "divs": _divs,
}


def _random_path(rng: random.Random) -> str:
    return "/" + "".join(rng.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(10))


def _echo(path: str) -> str:
    return html.escape(path)


def not_found_body(kind: str, path: str, rng: random.Random) -> tuple[str, str]:
    """(title, body html) of the not-found answer of `kind` for `path`."""
    head = f"<h1>Page not found</h1><p>Sorry, we could not find {_echo(path)}.</p>"
    if kind == "plain":
        return "Page not found", head
    if kind == "links":
        picks = rng.sample(POSTS, 5)
        links = "".join(
            f"<li><a href='{_random_path(rng)}'>{html.escape(p)}</a></li>" for p in picks
        )
        return "Page not found", f"{head}<p>Perhaps you were looking for:</p><ul>{links}</ul>"
    if kind == "noise":
        names = [f"item-{rng.getrandbits(32):08x}" for _ in range(5)]
        links = ", ".join(f"<a href='/{n}'>{n}</a>" for n in names)
        return "Page not found", f"{head}<p>Try one of these: {links}.</p>"
    if kind == "ticket":
        ticket = f"{rng.getrandbits(32):08x}-{rng.getrandbits(16):04x}"
        when = f"{rng.randrange(24):02d}:{rng.randrange(60):02d}:{rng.randrange(60):02d}"
        return "Error", (
            f"<h1>Error</h1><p>No page at {_echo(path)}.</p><p>Reference {ticket}, "
            f"logged at {when} on server web-{rng.randrange(1, 40)}.</p>"
        )
    if kind == "themed":
        return "Oops! That page can't be found", _themed(path)
    if kind == "chatty":
        liked = "".join(f"<p>You might like: {_babble(rng, 40)}</p>" for _ in range(2))
        return "Oops! That page can't be found", _themed(path) + liked
    if kind == "excerpts":
        picks = rng.sample(range(len(ARTICLE)), 3)
        teasers = "".join(f"<h2>{POSTS[i]}</h2><p>{ARTICLE[i][:220]}</p>" for i in picks)
        return "Page not found", f"{head}<h2>Recent posts</h2>{teasers}"
    if kind == "suggest":
        guess = min(
            POSTS, key=lambda p: -len(set(p.lower().split()) & set(path.lower().split("-")))
        )
        return "Not found", (
            f"<h1>Nothing here</h1><p>The address {_echo(path)} does not lead anywhere. "
            f"Did you mean <a href='/p/0'>{html.escape(guess)}</a>? You can also search "
            "the archive or go back to the start page.</p>"
        )
    raise ValueError(kind)


def _babble(rng: random.Random, n: int) -> str:
    """n made-up words: a suggestion box's text, new on every answer."""
    syllables = ("ba", "ko", "ri", "tu", "ne", "la", "mo", "si", "ve", "da")
    words = ("".join(rng.choice(syllables) for _ in range(rng.randint(2, 4))) for _ in range(n))
    return " ".join(words) + "."


def _themed(path: str) -> str:
    popular = "".join(f"<li>{html.escape(p)}</li>" for p in POSTS[2:6])
    cats = ", ".join(CATEGORIES)
    return (
        "<h1>Oops! That page can't be found.</h1>"
        f"<p>It looks like nothing was found at {_echo(path)}. The page may have been "
        "moved, renamed or deleted when we rebuilt the site last spring, or the link you "
        "followed may simply contain a typo. We are sorry for the detour.</p>"
        "<p>Maybe try one of the links below, or a search? Type a few words that you "
        "remember from the article into the search box at the top of every page and press "
        "enter; the search covers every post since the very first one, including comments "
        "and recipes.</p>"
        f"<h2>Most popular posts</h2><ul>{popular}</ul>"
        f"<h2>Browse by category</h2><p>{cats}</p>"
        "<p>If you think this is our mistake, write to us and tell us which page sent you "
        "here, and we will fix the link or put the missing page back.</p>"
    )


def real_bodies() -> dict[str, tuple[str, str]]:
    """name -> (title, body html) of the real pages (home is rendered by home_body)."""
    article = "".join(f"<p>{p}</p>" for p in ARTICLE)
    return {
        "article": (POSTS[0], f"<h1>{POSTS[0]}</h1>{article}"),
        "article2": (POSTS[3], f"<h1>{POSTS[3]}</h1><p>{ARTICLE[1]}</p><p>{ARTICLE[2]}</p>"),
        "contact": (
            "Contact",
            "<h1>Contact</h1><p>Write to hello@example.org or call "
            "+44 20 7946 0018 on weekdays.</p>",
        ),
        "tag": (
            "Tag: soup",
            "<h1>Tag: soup</h1><p>2 posts</p><ul><li><a href='/p/4'>"
            f"{POSTS[4]}</a></li><li><a href='/p/1'>{POSTS[1]}</a></li></ul>",
        ),
        "tag2": (
            "Tag: bicycle",
            "<h1>Posts tagged bicycle</h1><p><a href='/p/3'>"
            f"{POSTS[3]}</a></p><p><a href='/p/7'>{POSTS[7]}</a></p>",
        ),
        "about": (
            "About",
            "<h1>About</h1><p>Two friends, one allotment and far too many jars of chutney.</p>",
        ),
        "search": ("Search", "<h1>Search</h1><p>Type a few words and press enter.</p>"),
        "lost": (
            "Lost and found",
            "<h1>Lost and found</h1><p>Nothing was found at the "
            "last meeting. Report a lost item to the secretary.</p>",
        ),
    }


def home_body() -> tuple[str, str]:
    teasers = "".join(
        f"<h2><a href='/p/{i}'>{html.escape(p)}</a></h2><p>{ARTICLE[i % 3][:140]}...</p>"
        for i, p in enumerate(POSTS[:4])
    )
    return "Home", f"<h1>Welcome</h1>{teasers}"


def page(site: str, title: str, body: str) -> str:
    return SITE_RENDER[site](title, body)


def home(site: str) -> str:
    return page(site, *home_body())


def not_found(site: str, kind: str, path: str, seed: int) -> str:
    """The site's answer of `kind` to `path` (seed: the per-request random parts)."""
    if kind == "home":
        return home(site)
    return page(site, *not_found_body(kind, path, random.Random(f"{seed}{path}")))


def real_pages(site: str) -> dict[str, str]:
    pages = {name: page(site, t, b) for name, (t, b) in real_bodies().items()}
    return {"home": home(site), **pages}
