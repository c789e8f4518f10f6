"""Servers that keep sessions in their URLs' paths, one host per style, for crawls that
must neither lose their pages nor fetch each page once per session.

    aspnet     ASP.NET's cookieless state: a path without `/(S(<24 chars>))/` is answered
               with a redirect to a new session's; pages link relative (the token rides
               along) and root-relative (tokenless: another redirect)
    aspnet-app the same under a virtual directory, `/app/(X(1)S(...))/`
    jsredirect Java's first visit: a path without `;jsessionid=` is redirected to one,
               and every link carries it (encodeURL)
    jsrewrite  no redirects; every render mints a token that every link carries
    loop       every request, token or not, is redirected to a new token: never a page

Pages are /, /p1 .. /p<PAGES-1>, each with its own words (no two pages of the crawl are
one template or near duplicates).
Every request is logged with its status (OneHostWeb's server).
"""

from __future__ import annotations

import random
import re
import secrets

from tests.integration.one_host_web import OneHostWeb

PAGES = 24
STYLES: dict[str, str] = {
    "aspnet": "127.0.32.1",
    "aspnet-app": "127.0.32.2",
    "jsredirect": "127.0.32.3",
    "jsrewrite": "127.0.32.4",
    "loop": "127.0.32.5",
}
_ASPNET = re.compile(r"^(/app)?/\((?:X\(1\))?S\(([a-z0-5]{24})\)\)(/.*)$")
_PAGE = re.compile(r"/(?:p(\d+))?")


def _words(seed: str) -> str:
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    return " ".join(
        "".join(rng.choice(letters) for _ in range(rng.randint(3, 9))) for _ in range(250)
    )


def page_html(host: str, n: int, links: list[str]) -> bytes:
    anchors = " ".join(f'<a href="{href}">link {i}</a>' for i, href in enumerate(links))
    return (
        f"<html><head><title>Page {n}</title></head><body><h1>Page {n}</h1>"
        f"<p>{_words(f'{host} {n}')}</p><p>{anchors}</p></body></html>"
    ).encode()


def _targets(n: int) -> tuple[list[int], list[int]]:
    """(relative, root-relative) page numbers page n links: every page is reached."""
    return [(n + 1) % PAGES, (n * 7 + 2) % PAGES], [(n * 5 + 3) % PAGES]


def _name(m: int) -> str:
    return f"p{m}" if m else ""


class SessionWeb(OneHostWeb):
    """One session style on its own address and a free port; use as a context manager."""

    def __init__(self, style: str) -> None:
        super().__init__()
        self.style = style

    @property
    def host(self) -> str:
        return f"{self.style}.session.test"

    @property
    def address(self) -> str:
        return STYLES[self.style]

    def respond(self, path: str) -> tuple[int, tuple[tuple[str, str], ...], bytes]:
        """(status, headers, body): a page, its redirect to a session, or a 404."""
        if path == "/robots.txt":
            return super().respond(path)
        status, header, body = self._answer(path)
        name = "Location" if status == 302 else "Content-Type"
        return status, ((name, header),), body

    def _answer(self, path: str) -> tuple[int, str, bytes]:
        """(status, Location or content type, body)."""
        if self.style == "loop":
            match = _ASPNET.match(path)
            return 302, f"/(S({_token()})){match.group(3) if match else path}", b""
        if self.style.startswith("aspnet"):
            return self._aspnet(path)
        return self._java(path)

    def _aspnet(self, path: str) -> tuple[int, str, bytes]:
        app = "/app" if self.style == "aspnet-app" else ""
        match = _ASPNET.match(path)
        if match is None:
            rest = path.removeprefix(app) or "/"
            flag = "X(1)" if app else ""
            return 302, f"{app}/({flag}S({_token()})){rest}", b""
        rest = match.group(3)
        return self._page(rest, suffix="", root=app)

    def _java(self, path: str) -> tuple[int, str, bytes]:
        bare, _, token = path.partition(";jsessionid=")
        if not token and self.style == "jsredirect":
            return 302, f"{bare};jsessionid={secrets.token_hex(16).upper()}", b""
        return self._page(bare, suffix=f";jsessionid={token or secrets.token_hex(16).upper()}")

    def _page(self, rest: str, suffix: str, root: str = "") -> tuple[int, str, bytes]:
        found = _PAGE.fullmatch(rest)
        if found is None:
            return 404, "text/plain", b"not found\n"
        n = int(found.group(1) or 0)
        if n >= PAGES:
            return 404, "text/plain", b"not found\n"
        relative, rooted = _targets(n)
        links = [f"{_name(m) or './'}{suffix}" for m in relative]
        links += [f"{root}/{_name(m)}{'' if root else suffix}" for m in rooted]
        return 200, "text/html; charset=utf-8", page_html(self.host, n, links)


def _token() -> str:
    """An ASP.NET session id: 24 characters of a-z and 0-5."""
    return "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz012345") for _ in range(24))
