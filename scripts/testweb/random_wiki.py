"""A wiki of real pages only, where the sprawl check must close nothing (bench_sprawl.py,
tests/integration/test_generator_traps.py).

Every page /wiki/<w>-<w> has prose of its own and links `links` other pages drawn at random,
its next page (so every page is reachable) and a menu of five pages on every page. Early in
a crawl most of a page's links are new and its known ones are the menu, as on a generator
with a menu of its own (scripts/testweb/generator.py's "nav"): a random link graph is the
real site that reads most like a tarpit, its pages reached mostly through one link each.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SYLLABLES = ("ka", "lo", "mi", "ne", "su", "ta", "ri", "po", "ve", "zu", "ba", "do", "fi")
MENU = 5  # pages every page links
PROSE_WORDS = 300


class Wiki:
    """`pages` pages, each linking `links` random others, its next one and the menu."""

    def __init__(self, pages: int, links: int, seed: int) -> None:
        rng = random.Random(seed)
        names: list[str] = []
        while len(names) < pages:
            name = f"{_word(rng)}-{_word(rng)}"
            if name not in names:
                names.append(name)
        self.names = names
        self.links = {
            name: [*rng.sample(names, links), names[(i + 1) % pages]]
            for i, name in enumerate(names)
        }
        self.prose = {name: " ".join(_word(rng) for _ in range(PROSE_WORDS)) for name in names}

    def paths(self) -> list[str]:
        return [f"/wiki/{name}" for name in self.names]

    def page(self, path: str) -> str | None:
        menu = "".join(f'<li><a href="/wiki/{m}">{m}</a></li>' for m in self.names[:MENU])
        if path == "/":
            return f"<html><body><h1>Wiki</h1><ul>{menu}</ul></body></html>"
        name = path.removeprefix("/wiki/")
        if not path.startswith("/wiki/") or name not in self.links:
            return None
        see = "".join(f'<p>See <a href="/wiki/{to}">{to}</a>.</p>' for to in self.links[name])
        return (
            f"<html><head><title>{name}</title></head><body><nav><ul>{menu}</ul></nav>"
            f"<main><h1>{name}</h1><p>{self.prose[name]}</p>{see}</main></body></html>"
        )


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4)))


@contextmanager
def wiki_server(wiki: Wiki, address: str) -> Iterator[int]:
    """The wiki served on `address`; yields its port."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            body = wiki.page(self.path)
            if body is None:
                self.send_response(404)
                self.end_headers()
                return
            data = body.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer((address, 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()
        server.server_close()
