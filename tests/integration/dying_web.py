"""A one-host web whose server dies mid-crawl: after LIVE_PAGES pages it closes its
listening socket, so every later fetch is a refused connection: a host that went down for
good, or (BlinkingWeb) one that comes back on the same address and port OUTAGE_S later, as
a server restarting does. Its pages are prose of their own, each linking every other page,
so no duplicate or trap verdict ends the crawl before the server does."""

from __future__ import annotations

import threading
import time

from scripts.testweb.prose import seeded_rng, sentence
from tests.integration.one_host_web import OneHostWeb


class DyingWeb(OneHostWeb):
    HOST = "dying.test"
    ADDRESS = "127.0.77.9"
    PAGES = 30
    LIVE_PAGES = 6  # pages served before the server dies

    def __init__(self) -> None:
        super().__init__()
        self.served: list[str] = []
        self.dead = threading.Event()

    @property
    def pages(self) -> list[str]:
        return [self.url("/")] + [self.url(f"/doc/{n}") for n in range(1, self.PAGES)]

    def answer(self, path: str) -> tuple[str, bytes] | None:
        if path != "/" and not (path.startswith("/doc/") and path[5:].isdigit()):
            return None
        self.served.append(path)
        if len(self.served) == self.LIVE_PAGES:
            # Not from the handler's own thread: shutdown() waits for serve_forever.
            threading.Thread(target=self._die).start()
        rng = seeded_rng("dying", path)
        text = " ".join(sentence(rng, 12) for _ in range(20))
        links = " ".join(f'<a href="/doc/{n}">doc {n}</a>' for n in range(1, self.PAGES))
        html = f"<html><body><h1>{path}</h1><p>{text}</p><p>{links}</p></body></html>"
        return "text/html", html.encode()

    def _die(self) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()
        self.dead.set()

    def __exit__(self, *exc: object) -> None:
        if not self.dead.is_set():
            super().__exit__(*exc)


class BlinkingWeb(DyingWeb):
    HOST = "blinking.test"
    ADDRESS = "127.0.77.10"
    PAGES = 8
    LIVE_PAGES = 7  # down with one page left: every try of it falls in the outage
    OUTAGE_S = 10.0
    back_at = 0.0  # when it listened again

    def _die(self) -> None:
        port = self.port
        super()._die()
        time.sleep(self.OUTAGE_S)
        self.back_at = time.time()
        self._listen(port)
        self.dead.clear()
