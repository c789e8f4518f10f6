"""Session tokens a server stamps on every link of a page, cut before the links queue.

A site that keeps sessions in URLs (PHP's trans_sid, cookieless ASP.NET, a home-grown
`?visit=N`) writes one value into every same-host link of the page it renders. Named
ones (URL_SESSION_PARAMS) are dropped at admission; an unknown name turns each real page
into as many URLs as the crawl has renders of it, each a duplicate only its fetch
shows (the content pipeline then learns the name as noise: PRIORITY_NOISE_AFTER
duplicates later, and after those fetches).

The page itself gives it away: a parameter that carries **one value on (nearly) every
same-host link** cannot be what tells those pages apart. It is context, and it is
cut from the links when either

- the value is token-shaped (URL_PAGE_TOKEN_MIN_CHARS or more letters and digits, both
  present): a session id, minted for this render (`?sid=9f2c41d07a` on a seed fetched
  without one) or carried on from the page's own URL;
- or it is a number minted for this render: the page's own URL lacks the parameter or
  has another value (`?visit=3` links `?visit=4`).

Words stay, whatever the page's own URL: `?lang=fr` selects the variant of every page
(cutting it would crawl the default one instead), and a CMS without friendly URLs
routes on them (Joomla's `?option=com_content&view=article&id=5` from its home page:
only `id` differs between links, and without the others none of them resolves).

Stats: ``crawlproj/links/page_token_pages`` (pages with a stamped token),
``crawlproj/links/page_token_cut`` (links it was cut from).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from extensions.admission.patterns import query_values
from extensions.config import Setting, Table, above, at_least, at_most, read

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from crawlproj.extractors import Stats


@dataclass(frozen=True)
class PageTokenConfig:
    enabled: bool  # URL_STRIP_PAGE_TOKENS
    min_links: int  # same-host links carrying the value, at least
    share: float  # of the page's same-host links, at least
    min_chars: int  # letters and digits of a token-shaped value, at least

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> PageTokenConfig | None:
        """None when URL_STRIP_PAGE_TOKENS is off; ValueError names a bad value."""
        config = read(PAGE_TOKENS, settings)
        return config if config.enabled else None


PAGE_TOKENS = Table(
    PageTokenConfig,
    Setting("URL_STRIP_PAGE_TOKENS", "enabled", bool),
    Setting("URL_PAGE_TOKEN_MIN_LINKS", "min_links", int, at_least(2)),
    # Above half: two values can then never both be "on nearly every link".
    Setting("URL_PAGE_TOKEN_SHARE", "share", float, above(0.5), at_most(1.0)),
    Setting("URL_PAGE_TOKEN_MIN_CHARS", "min_chars", int, at_least(1)),
)


def cut_page_tokens(
    page_url: str, links: list[str], config: PageTokenConfig, stats: Stats | None = None
) -> list[str]:
    """`links` with the page's stamped session tokens cut (first occurrence kept, order
    kept); `links` itself when the page stamps none. Costs a scan of the links, and a
    query split only on a page where enough same-host links have one (a wiki's
    ?action=edit links on half of them are rejected without it)."""
    if sum("?" in link for link in links) < config.min_links:
        return links  # the common page: too few queries to carry a stamp
    page = urlsplit(page_url)
    origin = f"{page.scheme}://{page.netloc}"
    same_host = [link for link in links if _on(link, origin)]
    tokens = _stamped(page.query, same_host, config)
    if not tokens:
        return links
    out: list[str] = []
    seen: set[str] = set()
    cut = 0
    for link in links:
        kept = _without(link, tokens) if _on(link, origin) else link
        cut += kept != link
        if kept not in seen:
            seen.add(kept)
            out.append(kept)
    if stats is not None:
        stats.inc_value("crawlproj/links/page_token_pages")
        stats.inc_value("crawlproj/links/page_token_cut", cut)
    return out


def _on(link: str, origin: str) -> bool:
    """Whether the absolute `link` is on the page's scheme, host and port."""
    return link.startswith(origin) and (len(link) == len(origin) or link[len(origin)] in "/?")


def _stamped(own_query: str, same_host: list[str], config: PageTokenConfig) -> frozenset[str]:
    """Names whose one value is on at least `share` of the same-host links, and is
    token-shaped or a number minted for this render."""
    need = max(config.min_links, config.share * len(same_host))
    queried = [link.partition("?")[2] for link in same_host if "?" in link]
    if len(queried) < need:
        return frozenset()  # no name can be on enough links
    pairs: Counter[tuple[str, str]] = Counter()
    names: Counter[str] = Counter()
    for query in queried:
        # As written, not unquoted: a stamp is written alike on every link of its page.
        for name, value in query_values(query).items():
            pairs[(name, value)] += 1
            names[name] += 1
    own = query_values(own_query)
    return frozenset(
        name
        for (name, value), count in pairs.items()
        if count >= need
        and names[name] == count  # one value wherever the name appears
        and (
            _token_shaped(value, config.min_chars)
            or (value.isdigit() and value.isascii() and own.get(name) != value)
        )
    )


def _token_shaped(value: str, min_chars: int) -> bool:
    letters = digits = 0
    for ch in value:
        if ch.isascii() and ch.isalpha():
            letters += 1
        elif ch.isdigit():
            digits += 1
        elif ch not in "-_.":
            return False
    return letters > 0 and digits > 0 and letters + digits >= min_chars


def _without(url: str, names: frozenset[str]) -> str:
    """`url` without the query pairs named in `names`, the rest as written."""
    head, mark, query = url.partition("?")
    if not mark:
        return url
    kept = [pair for pair in query.split("&") if pair and pair.partition("=")[0] not in names]
    return f"{head}?{'&'.join(kept)}" if kept else head
