"""The shipped near-duplicate settings on three labelled corpora (not timed).

precision >= 0.99 and recall >= 0.95 on each (0.94 on the unnamed stress set,
see MIN_RECALL_UNNAMED): recall counts each variant page
against the page it is a variant of (what a crawl that met the original first
must decide); all pairs (variant against variant, two rounds of independent
edits apart) must stay >= 0.90. Per-variant recall is printed. On the real
documentation no pair with an exact 5-shingle resemblance under 0.5 may be
called a near duplicate.
"""

from __future__ import annotations

import functools

import pytest

from extensions.content.neardup_config import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE
from tests.corpus import evaluate, furniture_corpus, neardup_corpus, realdocs

MIN_PRECISION = 0.99
MIN_RECALL = 0.95
MIN_ALL_PAIRS_RECALL = 0.90
# The unnamed twin of the near-dup corpus is a stress set beyond the three labelled
# kinds: its in-text ad, date and counter survive extraction, so its "all" pages
# (300-word pages with a 35-word ad swapped and 2% of words edited) sit at a true
# 5-shingle resemblance of ~0.6-0.7, around NEARDUP_MIN_RESEMBLANCE. Lowering the
# bar to 0.6 would lift it to 0.967 at the cost of precision margin (0.5 is
# "distinct"); the bar stays, and the stress set is held to this.
MIN_RECALL_UNNAMED = 0.94


@functools.cache
def _variant_scores(name: str) -> tuple[evaluate.Score, evaluate.Score, dict[str, float]]:
    if name == "furniture":
        pages = furniture_corpus.build_corpus()
    else:
        pages = neardup_corpus.build_corpus()
        if name == "neardup-unnamed":
            pages = evaluate.unnamed(pages)
    flagged = evaluate.decided(
        evaluate.sign([p.html for p in pages]), DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE
    )
    return evaluate.score_variants(pages, flagged)


@pytest.mark.parametrize("name", ["neardup", "neardup-unnamed", "furniture"])
def test_variant_corpus_precision_and_recall(name: str) -> None:
    pairs, to_base, per_variant = _variant_scores(name)
    print(
        f"\n{name}: d<={DEFAULT_MAX_DISTANCE} r>={DEFAULT_MIN_RESEMBLANCE} precision "
        f"{pairs.precision:.4f} (fp {pairs.fp}) recall to base {to_base.recall:.4f} "
        f"all pairs {pairs.recall:.4f}"
    )
    print("  per variant: " + " ".join(f"{v} {r:.3f}" for v, r in per_variant.items()))
    assert pairs.precision >= MIN_PRECISION
    assert to_base.recall >= (MIN_RECALL_UNNAMED if name == "neardup-unnamed" else MIN_RECALL)
    assert pairs.recall >= MIN_ALL_PAIRS_RECALL
    # A date, a counter or a footer line alone never hides a duplicate.
    for variant in ("timestamp", "counter", "footer"):
        assert per_variant[variant] >= 0.99, variant


def test_corpora_are_deterministic_and_of_the_sizes_documented() -> None:
    a, b = furniture_corpus.build_corpus(), furniture_corpus.build_corpus()
    assert a == b and len(a) == furniture_corpus.BASES * len(furniture_corpus.VARIANTS)
    assert len({p.base for p in neardup_corpus.build_corpus()}) >= 150


@pytest.mark.skipif(
    not realdocs.installed(),
    reason=f"needs Debian's {', '.join(realdocs.PACKAGES)} (.ci/run installs them)",
)
def test_real_documentation_no_distinct_pair_is_a_near_duplicate() -> None:
    pages = realdocs.load()
    signed = evaluate.sign_texts([p.text for p in pages])
    label = evaluate.Labeller(signed.texts)
    positives = evaluate.true_duplicates(signed, label)
    flagged = evaluate.decided(signed, DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE)
    score, distinct = evaluate.score_real(flagged, positives, label)
    lowest = min((label(i, j) for i, j in flagged), default=1.0)
    print(
        f"\nrealdocs: {len(pages)} pages, {len(flagged)} pairs called near duplicates "
        f"(lowest true resemblance {lowest:.3f}), {len(positives)} pairs above "
        f"{evaluate.DUPLICATE_ABOVE}: precision {score.precision:.4f} recall {score.recall:.4f}"
    )
    assert not distinct, [(pages[i].path, pages[j].path, round(r, 3)) for i, j, r in distinct]
    assert score.recall >= MIN_RECALL
    assert positives, "the four manuals hold near-duplicate pages (CMake families)"
