"""Precision and recall of the near-duplicate decision on the labelled corpora.

The decision is the pipeline's: both pages have >= NEARDUP_MIN_WORDS words of
main text, their simhashes are within max_distance bits (the index proposes)
and their sketches estimate a 5-shingle resemblance >= min_resemblance (the
verification confirms). Three corpora, three kinds of page:

- ``neardup``: 156 short-to-medium pages (300-3000 words) of one site in 7
  variants each (tests/corpus/neardup_corpus.py); the ad sits in the text.
- ``neardup-unnamed``: the same pages with every class and id renamed to a
  meaningless one, so the in-text ad, date and counter survive extraction:
  what the fingerprint and the sketch must tolerate by themselves.
- ``furniture``: 48 long texts (1,000-6,000 words) on three site layouts in 7
  furniture variants each (tests/corpus/furniture_corpus.py).
- ``realdocs``: the HTML manuals Debian ships (Git: AsciiDoc, CMake and
  Python: Sphinx, PostgreSQL: DocBook; tests/corpus/realdocs.py), labelled by
  the exact 5-shingle resemblance of their main text: distinct below 0.5, near
  duplicate above 0.9, in between not counted either way.

``python -m tests.corpus.evaluate`` prints the sweep over thresholds that
chose the shipped settings (bench/README.md keeps the tables).
"""

from __future__ import annotations

import itertools
import re
import sys
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from extensions.content.fingerprint import (
    SKETCH_SHINGLE,
    SKETCH_SIZE,
    TextSignature,
    signature,
    tokens,
)
from extensions.content.main_text import page_text
from tests.corpus.neardup_corpus import Page

DISTINCT_BELOW = 0.5
DUPLICATE_ABOVE = 0.9
MIN_WORDS = 50  # NEARDUP_MIN_WORDS


@dataclass(frozen=True)
class Signed:
    """The pipeline's view of a corpus: main texts and their signatures."""

    texts: list[str]
    simhashes: np.ndarray  # uint64, 0 for no text
    sketches: np.ndarray  # (n, SKETCH_SIZE) uint16
    words: np.ndarray


@dataclass(frozen=True)
class Score:
    tp: int
    fp: int
    fn: int

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def sign(htmls: Sequence[str | bytes]) -> Signed:
    texts = [page_text(h).text for h in htmls]
    return sign_texts(texts)


def sign_texts(texts: list[str]) -> Signed:
    sigs: list[TextSignature] = [signature(t) for t in texts]
    empty = bytes(2 * SKETCH_SIZE)
    return Signed(
        texts=texts,
        simhashes=np.array([s.simhash or 0 for s in sigs], dtype=np.uint64),
        sketches=np.array(
            [np.frombuffer(s.sketch or empty, dtype=">u2") for s in sigs], dtype=np.uint16
        ),
        words=np.array([s.words for s in sigs]),
    )


def proposed(signed: Signed, max_distance: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pairs (i < j) the index would propose, with their estimated resemblance."""
    n = len(signed.texts)
    long_enough = signed.words >= MIN_WORDS
    out_i, out_j = [], []
    for i in range(n - 1):  # row by row: all pairs of 4,000 pages would not fit in memory
        if not long_enough[i]:
            continue
        dist = np.bitwise_count(signed.simhashes[i + 1 :] ^ signed.simhashes[i])
        js = np.nonzero((dist <= max_distance) & long_enough[i + 1 :])[0] + i + 1
        out_i.append(np.full(len(js), i))
        out_j.append(js)
    iu = np.concatenate(out_i) if out_i else np.empty(0, np.intp)
    ju = np.concatenate(out_j) if out_j else np.empty(0, np.intp)
    est = (signed.sketches[iu] == signed.sketches[ju]).mean(axis=1)
    return iu, ju, est


def decided(signed: Signed, max_distance: int, min_resemblance: float) -> set[tuple[int, int]]:
    """Pairs the pipeline calls near duplicates."""
    iu, ju, est = proposed(signed, max_distance)
    keep = est >= min_resemblance
    return set(zip(iu[keep].tolist(), ju[keep].tolist(), strict=True))


# ------------------------------------------------------------ variant corpora

_NAMED = re.compile(r"""\b(class|id)=(['"])[^'"]*\2""")


def unnamed(pages: list[Page]) -> list[Page]:
    """The pages with every class and id attribute renamed to one meaningless name."""
    return [Page(p.base, p.variant, _NAMED.sub(r"\1=\2k\2", p.html)) for p in pages]


def score_variants(
    pages: list[Page], flagged: set[tuple[int, int]]
) -> tuple[Score, Score, dict[str, float]]:
    """(all pairs, base-to-variant pairs, recall per variant) on a variant corpus."""
    bases = [p.base for p in pages]
    by_base: dict[int, list[int]] = defaultdict(list)
    for i, b in enumerate(bases):
        by_base[b].append(i)
    positives = {pair for group in by_base.values() for pair in itertools.combinations(group, 2)}
    tp = len(flagged & positives)
    all_pairs = Score(tp, len(flagged) - tp, len(positives) - tp)
    hits: dict[str, list[bool]] = defaultdict(list)
    for group in by_base.values():
        base = next(i for i in group if pages[i].variant == "base")
        for i in group:
            if i != base:
                hits[pages[i].variant].append((min(base, i), max(base, i)) in flagged)
    found = sum(sum(h) for h in hits.values())
    total = sum(len(h) for h in hits.values())
    to_base = Score(found, all_pairs.fp, total - found)
    return all_pairs, to_base, {v: sum(h) / len(h) for v, h in sorted(hits.items())}


# ------------------------------------------------------------ real documents


def shingle_set(text: str, k: int = SKETCH_SHINGLE) -> frozenset[str]:
    words = tokens(text)
    return frozenset(" ".join(words[i : i + k]) for i in range(max(len(words) - k + 1, 1)))


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 1.0


class Labeller:
    """Exact 5-shingle resemblance of main texts, computed on demand and cached."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self._sets: dict[int, frozenset[str]] = {}
        self._pairs: dict[tuple[int, int], float] = {}

    def __call__(self, i: int, j: int) -> float:
        key = (min(i, j), max(i, j))
        if key not in self._pairs:
            for x in key:
                if x not in self._sets:
                    self._sets[x] = shingle_set(self.texts[x])
            self._pairs[key] = jaccard(self._sets[key[0]], self._sets[key[1]])
        return self._pairs[key]


def true_duplicates(signed: Signed, label: Labeller) -> set[tuple[int, int]]:
    """Every pair above DUPLICATE_ABOVE: candidates by banding the exact sketches
    (32 bands of 4 slots: a pair at 0.9 shares a band with probability ~1 - 1e-14),
    then labelled exactly."""
    rows = SKETCH_SIZE // 32
    candidates: set[tuple[int, int]] = set()
    eligible = np.nonzero(signed.words >= MIN_WORDS)[0]
    for band in range(32):
        buckets: dict[bytes, list[int]] = defaultdict(list)
        for i in eligible:
            buckets[signed.sketches[i, band * rows : (band + 1) * rows].tobytes()].append(int(i))
        for members in buckets.values():
            candidates.update(itertools.combinations(members, 2))
    return {pair for pair in candidates if label(*pair) > DUPLICATE_ABOVE}


def score_real(
    flagged: set[tuple[int, int]], positives: set[tuple[int, int]], label: Labeller
) -> tuple[Score, list[tuple[int, int, float]]]:
    """Score (ambiguous pairs count neither way) and the flagged distinct pairs."""
    distinct = [(i, j, label(i, j)) for i, j in sorted(flagged) if label(i, j) < DISTINCT_BELOW]
    tp = len(flagged & positives)
    return Score(tp, len(distinct), len(positives) - tp), distinct


# ---------------------------------------------------------------------- sweep


def _sweep_variants(name: str, pages: list[Page]) -> None:
    signed = sign([p.html for p in pages])
    for k, bar in itertools.product((8, 10, 11, 12, 13, 14), (0.6, 0.65, 0.7, 0.75, 0.8)):
        pairs, to_base, per_variant = score_variants(pages, decided(signed, k, bar))
        variants = " ".join(f"{v} {r:.3f}" for v, r in per_variant.items())
        print(
            f"{name:9s} d<={k:2d} r>={bar:.2f}  all pairs P {pairs.precision:.4f} "
            f"R {pairs.recall:.4f} | to base R {to_base.recall:.4f} | {variants}"
        )


def _sweep_real() -> None:
    from tests.corpus import realdocs

    pages = realdocs.load()
    signed = sign_texts([p.text for p in pages])
    label = Labeller(signed.texts)
    positives = true_duplicates(signed, label)
    print(f"realdocs: {len(pages)} pages, {len(positives)} pairs above {DUPLICATE_ABOVE}")
    for k, bar in itertools.product((8, 10, 11, 12, 13, 14), (0.6, 0.65, 0.7, 0.75, 0.8)):
        flagged = decided(signed, k, bar)
        score, distinct = score_real(flagged, positives, label)
        worst = min((r for _, _, r in distinct), default=None)
        print(
            f"realdocs  d<={k:2d} r>={bar:.2f}  flagged {len(flagged)} P {score.precision:.4f} "
            f"R {score.recall:.4f} distinct flagged {len(distinct)} (lowest {worst})"
        )


if __name__ == "__main__":
    from tests.corpus import furniture_corpus, neardup_corpus

    which = sys.argv[1:] or ["neardup", "neardup-unnamed", "furniture", "realdocs"]
    if "neardup" in which:
        _sweep_variants("neardup", neardup_corpus.build_corpus())
    if "neardup-unnamed" in which:
        _sweep_variants("unnamed", unnamed(neardup_corpus.build_corpus()))
    if "furniture" in which:
        _sweep_variants("furniture", furniture_corpus.build_corpus())
    if "realdocs" in which:
        _sweep_real()
