"""The token hash's power table (extensions/content/fingerprint.py): kept between pages only
up to POWERS_KEPT entries, so one long page does not hold its table for the whole crawl,
and a longer text's own table hashes its tokens as a short text's does."""

from __future__ import annotations

import random

import numpy as np

from extensions.content import fingerprint
from extensions.content.fingerprint import POWERS_KEPT, token_hashes, tokens


def _words(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        "".join(rng.choices("abcdefghijklmnopqrstuvwxyz0123456789é", k=rng.randint(1, 12)))
        for _ in range(n)
    ]


def test_a_text_longer_than_the_kept_table_leaves_it_at_its_cap() -> None:
    text = " ".join(_words(3 * POWERS_KEPT // 7, seed=1))
    assert len(text.encode()) > 2 * POWERS_KEPT
    token_hashes(text)
    token_hashes("a short page")
    assert len(fingerprint._POWERS[0]) <= POWERS_KEPT


def test_a_long_texts_tokens_hash_as_they_do_alone() -> None:
    words = _words(3 * POWERS_KEPT // 7, seed=2)
    text = " ".join(words)
    hashes = token_hashes(text)
    assert tokens(text) == [w.lower() for w in words]
    rng = random.Random(3)
    for k in [*rng.sample(range(len(words)), 200), len(words) - 1]:
        assert hashes[k] == token_hashes(words[k])[0], k  # position-free: each alone
    # Past the kept table's end too, where the text's own table is used.
    tail = len(words) - 50
    expected = np.concatenate([token_hashes(w) for w in words[tail:]])
    assert (hashes[tail:] == expected).all()
