"""What each origin's soft-404 probe found, shared by every worker (G:soft404 in keys.py).

One hash, origin -> state JSON. The first worker to see a 200 HTML page of an
origin claims it (HSETNX: one probe per origin per crawl, whichever worker wins)
and stores that page's words and phrases with the claim: they are the reference the
answer is compared with (soft404.py). The probe's answer then replaces the claim:
``honest`` (not a 200) or ``soft`` with the answer's fingerprint; the reference
is dropped then, so an origin costs a few bytes, or its answer's words. A soft
answer with text keeps its phrases (``pend``) until the second probe's answer
turns them into the template (``tmpl``).

Workers keep the settled states they read (a probe answers once per crawl), up
to CACHE_ORIGINS of them; a claimed origin is read again at most every
CLAIM_RECHECK_S, so a probe that never answers (dropped by robots.txt, failed
to download) costs one read per origin per interval, and its pages go unchecked.
"""

from __future__ import annotations

import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from extensions.bounded import keep_newest
from extensions.content.soft404 import NotFoundPrint, Phrases, Words
from extensions.state.connection import as_str

CLAIMED = "claimed"  # a worker sent the probe; no answer yet
HONEST = "honest"  # the probe got a non-200 answer: the origin's 200s are real pages
SOFT = "soft"  # the probe got a 200: `print` says what it looks like
CLAIM_RECHECK_S = 10.0
CACHE_ORIGINS = 4096


@dataclass(frozen=True)
class OriginState:
    kind: str  # CLAIMED | HONEST | SOFT
    reference: Words = frozenset()  # CLAIMED: words of the page that claimed the origin
    print: NotFoundPrint | None = None  # SOFT only
    reference_phrases: Phrases = ()  # CLAIMED: that page's phrases

    def encode(self) -> str:
        record: dict[str, Any] = {"k": self.kind}
        if self.reference:
            record["ref"] = sorted(self.reference)
        if self.reference_phrases:
            record["refp"] = list(self.reference_phrases)
        if self.print is not None:
            p = self.print
            record.update(final=p.final_url, own=sorted(p.own), furn=sorted(p.furniture))
            # "hash", "pend", "tmpl": added later, and only when set.
            extra = {"hash": p.body_hash, "pend": list(p.pending), "tmpl": list(p.template)}
            record.update((name, value) for name, value in extra.items() if value)
        return json.dumps(record, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def decode(cls, raw: str) -> OriginState:
        """ValueError when raw is not a state this module wrote."""
        try:
            record = json.loads(raw)
            kind = record["k"]
            print_ = None
            if kind == SOFT:
                own, furniture = frozenset(record["own"]), frozenset(record["furn"])
                # "hash", "pend", "tmpl": added later; a state written before has none.
                print_ = NotFoundPrint(
                    record["final"],
                    own,
                    furniture,
                    record.get("hash", ""),
                    tuple(record.get("pend", ())),
                    tuple(record.get("tmpl", ())),
                )
            reference = frozenset(record.get("ref", ()))
            return cls(kind, reference, print_, tuple(record.get("refp", ())))
        except (KeyError, TypeError, AttributeError, json.JSONDecodeError) as exc:
            raise ValueError(f"not a soft-404 state: {raw[:80]!r} ({exc})") from None


class OriginStates:
    """G:soft404 through a sync Redis client (called from worker threads)."""

    def __init__(self, redis: Any, key: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.redis = redis
        self.key = key
        self.clock = clock
        self._settled: OrderedDict[str, OriginState] = OrderedDict()
        # origin -> when it was last read as claimed, oldest first (bounded: see _read_claimed)
        self._claimed: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()  # the caches are shared by the pipeline's threads

    def get(self, origin: str) -> OriginState | None:
        """The origin's state; None when nobody claimed it yet. RedisError passes."""
        with self._lock:
            if origin in self._settled:
                self._settled.move_to_end(origin)
                return self._settled[origin]
            read_at = self._claimed.get(origin)
        if read_at is not None and self.clock() - read_at < CLAIM_RECHECK_S:
            return OriginState(CLAIMED)
        state = self.read(origin)
        if state is None:
            return None
        if state.kind == CLAIMED:
            self._read_claimed(origin)
        else:
            self._keep(origin, state)
        return state

    def read(self, origin: str) -> OriginState | None:
        """The origin's state in Redis, past the caches (a claim with its reference)."""
        raw = self.redis.hget(self.key, origin)
        return None if raw is None else OriginState.decode(as_str(raw))

    def claim(self, origin: str, reference: Words, phrases: Phrases = ()) -> bool:
        """True for the one caller (of every worker) that is to send the probe."""
        state = OriginState(CLAIMED, reference, reference_phrases=phrases)
        won = bool(self.redis.hsetnx(self.key, origin, state.encode()))
        self._read_claimed(origin)
        return won

    def settle(self, origin: str, state: OriginState) -> None:
        """The probe answered: its state replaces the claim (and any earlier answer)."""
        self.redis.hset(self.key, origin, state.encode())
        self._keep(origin, state)

    def _read_claimed(self, origin: str) -> None:
        # A claim never settled (its probe dropped or lost) would stay for the whole crawl.
        # Entries older than CLAIM_RECHECK_S are read from Redis again anyway, so those go
        # first; past CACHE_ORIGINS live ones, the oldest go too (one more HGET each).
        now = self.clock()
        with self._lock:
            self._claimed[origin] = now
            self._claimed.move_to_end(origin)
            while self._claimed and (
                len(self._claimed) > CACHE_ORIGINS
                or now - next(iter(self._claimed.values())) >= CLAIM_RECHECK_S
            ):
                self._claimed.popitem(last=False)

    def _keep(self, origin: str, state: OriginState) -> None:
        with self._lock:
            self._claimed.pop(origin, None)
            keep_newest(self._settled, origin, state, CACHE_ORIGINS)
