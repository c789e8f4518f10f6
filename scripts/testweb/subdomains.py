"""A wildcard-DNS spider trap: every name under a host answers (HostSpec.subdomain_trap).

Some servers answer any name under their domain (a wildcard DNS record and a catch-all
virtual host), and a page that links made-up subdomains (link farms, "your city" pages
of some directories) opens an endless supply of hosts. Each is a new origin with its
own robots.txt, soft-404 probe, host budget and URL patterns, so nothing a crawler
learns per host ever closes it. Every subdomain serves one template page (its name in
a few fixed words; with HostSpec.subdomain_prose, paragraphs of its own instead: a link
farm's generated text) linking SUB_LINKS more made-up subdomains; the real host's home
page links two. TestWeb pins "*.<host>" in the crawler's DNS_HOSTS_MAP.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .prose import seeded_rng, sentence, template
from .routes import Link, Route, plain
from .spec import HostSpec

SUB_LINKS = 3  # made-up subdomains a subdomain's page links
HOME_LINKS = 2  # and the real host's home page
ROBOTS = b"User-agent: *\nAllow: /\n"

HostUrl = Callable[[str, str], str]  # (host, path) -> URL, the web's port and all


class Subdomains:
    """The made-up subdomains of every host that has subdomain_trap."""

    def __init__(self, hosts: Iterable[HostSpec], url: HostUrl, seed: int) -> None:
        hosts = list(hosts)
        self.parents = [h.name for h in hosts if h.subdomain_trap]
        self.prose = {h.name for h in hosts if h.subdomain_trap and h.subdomain_prose}
        self.url, self.seed = url, seed

    def parent_of(self, host: str) -> str | None:
        """The trap host `host` is a made-up subdomain of, or None."""
        return next((p for p in self.parents if host.endswith("." + p)), None)

    def route(self, host: str, path: str) -> Route | None:
        """What a made-up subdomain serves at `path` (None: not one)."""
        parent = self.parent_of(host)
        if parent is None:
            return None
        if path.partition("?")[0] == "/robots.txt":
            return Route("robots", 200, body=ROBOTS, headers=plain())
        name = host.removesuffix("." + parent)
        anchors = [(link, "Nearby") for link in self.made_up(parent, host, SUB_LINKS)]
        anchors.append((Link(self.url(parent, "/"), self.url(parent, "/")), parent))
        text = [f"Local listings for {name}. Nothing is listed for {name} yet."]
        if parent in self.prose:  # words of its own, seeded on the made-up name
            rng = seeded_rng(self.seed, "subdomain prose", host)
            text = [sentence(rng, rng.randint(30, 60)) for _ in range(rng.randint(3, 5))]
        return template("subdomain", f"Welcome to {name}", text, anchors)

    def made_up(self, parent: str, source: str, n: int) -> list[Link]:
        """n made-up subdomains of `parent`, seeded by the page that links them."""
        rng = seeded_rng(self.seed, "subdomain", source)
        names = [f"w{rng.randrange(16**6):06x}.{parent}" for _ in range(n)]
        return [Link(self.url(name, "/"), self.url(name, "/")) for name in names]
