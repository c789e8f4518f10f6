"""What a duplicate teaches about its URL's query parameters (extensions/admission/noise.py).

Two kinds of evidence, both counted per "<host> <parameter>" in G:noise_counts and
learned into G:noise_params once they reach their bar:

- **The same text** (resemblance >= NOISE_MIN_RESEMBLANCE) under a URL that differs from
  its original's in some parameters: each parameter's values count; PRIORITY_NOISE_AFTER
  distinct values learn it. A session token or a tracking stamp.
- **A view**: a duplicate, near (NOISE_NEAR_RESEMBLANCE and up) or not, whose URL adds a
  parameter to a page that had none (`added_values`): a CMS's view of the page (a reply
  form, a print view, a history tab). Its values count apart, and so do the paths they
  were seen on: PRIORITY_NOISE_AFTER values on NOISE_NEAR_PATHS paths learn the
  parameter (`?replytocom=<comment>`), one value on NOISE_NEAR_PATHS paths learns that
  value alone (`?print=1`, `?action=history`; `?tab=overview` when it is the page's
  default, `?tab=reviews` kept). A category listing is not a view (its original is
  another category, which has the parameter), and one path's variants, however alike,
  teach nothing: what is learned was seen on several pages.

Feedback only: a Redis error loses the evidence, never the page.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from redis.exceptions import RedisError
from scrapy.statscollectors import StatsCollector

from extensions.admission.filters import host_of
from extensions.admission.noise import SEPARATOR, NoiseConfig, added_values, differing_values

logger = logging.getLogger(__name__)

# The resemblance (MinHash of the main text) a duplicate needs to teach a noise parameter
# on its values alone: the same text under another URL. A near duplicate says less: a
# shop's category listing at /shop/?category=shirts was one of /shop/?category=shoes at
# 0.93 (a few products of its own beside shared prose), and "category" learned as noise
# dropped every other category of the shop, and its products with them
# (tests/integration/test_shop_categories).
NOISE_MIN_RESEMBLANCE = 0.99
# A near duplicate that adds a parameter to its original counts from here on. The test
# web's views of a page, against the page (scripts/testweb/alternates.py, 280 pages):
# reply forms 0.86 / 0.91 / 0.95 (min / p10 / median), print views and history tabs
# 0.91 / 0.95-0.96 / 0.98; a wiki's old revision 0.14-0.70 (another text: not taught).
NOISE_NEAR_RESEMBLANCE = 0.9
# Distinct paths whose views must show a parameter before near duplicates teach it.
NOISE_NEAR_PATHS = 2
# A value's first characters name it among a parameter's values (a session token's 32).
NOISE_VALUE_CHARS = 40


class NoiseTeacher:
    """Counts duplicates' evidence in Redis and learns noise parameters from it."""

    def __init__(
        self, redis: Any, counts: str, learned: str, config: NoiseConfig, stats: StatsCollector
    ) -> None:
        self.redis, self.counts, self.learned = redis, counts, learned
        self.after = config.after  # PRIORITY_NOISE_AFTER; 0: learn nothing
        # PRIORITY_NOISE_VIEWS: views teach (off: only the same text does, as before).
        self.near = NOISE_NEAR_RESEMBLANCE if config.views else NOISE_MIN_RESEMBLANCE
        self.stats = stats

    def learn(self, url: str, original: str, resemblance: float) -> tuple[tuple[str, str], ...]:
        """(host, parameter or "parameter=value") pairs this duplicate of `original` made
        noise."""
        if not self.after:
            return ()
        if resemblance < self.near:
            self.stats.inc_value("content/noise_evidence_too_far")
            return ()
        host = host_of(url)
        names: list[str] = []
        try:
            if resemblance >= NOISE_MIN_RESEMBLANCE:
                names += [
                    n for n, v in differing_values(url, original).items() if self._same(host, n, v)
                ]
            added = added_values(url, original) if self.near < NOISE_MIN_RESEMBLANCE else {}
            if added:
                self.stats.inc_value("content/noise_evidence_view")
                path = urlsplit(url).path or "/"
                names += [n for name, v in added.items() for n in self._view(host, name, v, path)]
        except RedisError:
            pass  # feedback only: what was learned before the error stands
        for name in names:
            self.stats.inc_value("content/noise_params_learned")
            what = "value" if "=" in name else "parameter"
            logger.info("Learned noise %s %r of %s (duplicates differ in it)", what, name, host)
        return tuple((host, name) for name in names)

    def _same(self, host: str, name: str, values: Iterable[str]) -> bool:
        member = f"{host}{SEPARATOR}{name}"
        (seen,) = self._count({member: [v[:NOISE_VALUE_CHARS] for v in values]})
        return seen >= self.after and self._learn(member)

    def _view(self, host: str, name: str, value: str, path: str) -> list[str]:
        """What a view adding `name`=`value` to the page at `path` taught: the parameter
        (PRIORITY_NOISE_AFTER values over NOISE_NEAR_PATHS paths), the pair (its value
        on NOISE_NEAR_PATHS paths), or nothing."""
        member = f"{host}{SEPARATOR}{name}"
        # A path by its digest: paths share long prefixes, and values are cut to 40 chars.
        digest = hashlib.blake2b(path.encode(), digest_size=8).hexdigest()
        counters = {f"{member} view": [value[:NOISE_VALUE_CHARS]], f"{member} paths": [digest]}
        pair = len(value) <= NOISE_VALUE_CHARS  # a longer one is a token, never repeated
        if pair:
            counters[f"{member} value={value} paths"] = [digest]
        values, paths, *value_paths = self._count(counters)
        if values >= self.after and paths >= NOISE_NEAR_PATHS:
            return [name] if self._learn(member) else []
        if value_paths and value_paths[0] >= NOISE_NEAR_PATHS and self._learn(f"{member}={value}"):
            return [f"{name}={value}"]
        return []

    def _count(self, items: dict[str, list[str]]) -> list[int]:
        """Record each counter's items (a field "<counter>=<item>" each); per counter, the
        number of distinct items it has seen. Two round trips."""
        pipe = self.redis.pipeline(transaction=False)
        for counter, values in items.items():
            for value in values:
                pipe.hsetnx(self.counts, f"{counter}={value}", 1)
        replies = iter(pipe.execute())
        pipe = self.redis.pipeline(transaction=False)
        for counter, values in items.items():  # by 0: the count as it is
            pipe.hincrby(self.counts, counter, sum(int(next(replies)) for _ in values))
        return [int(total) for total in pipe.execute()]

    def _learn(self, member: str) -> bool:
        """True for the call that adds `member` (once across workers)."""
        return bool(self.redis.sadd(self.learned, member))
