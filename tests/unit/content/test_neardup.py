"""Unit tests for main text, fingerprints and sketches, visible text and the index plan."""

from __future__ import annotations

import random
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extensions.content.fingerprint import (
    SKETCH_BYTES,
    content_hash,
    fingerprint,
    fingerprint_reference,
    hamming,
    resemblance,
    signature,
    tokens,
)
from extensions.content.main_text import page_text
from extensions.content.neardup_config import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE
from extensions.content.simhash_index import DEFAULT_BLOCKS, plan_blocks
from extensions.content.visible_text import visible_text
from tests.corpus import neardup_corpus
from tests.corpus.evaluate import jaccard, shingle_set

PROSE = (
    "The crawler fetches every page at most once per day, honours robots.txt and "
    "spreads requests over hosts. Near-duplicate pages are detected by comparing "
    "simhash fingerprints of their main text; exact copies by a content hash. "
    "Templated sites produce many pages that share navigation and footers, which "
    "the extraction removes before fingerprinting."
)


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    vocab = neardup_corpus.paragraph_stream()[seed % 50].split()
    return " ".join(rng.choice(vocab) + str(rng.randrange(10**6)) for _ in range(n))


# ------------------------------------------------------------------ hamming


@given(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))
def test_hamming_matches_bit_string_count(a: int, b: int) -> None:
    assert hamming(a, b) == bin(a ^ b).count("1") == hamming(b, a)
    assert hamming(a, a) == 0


# -------------------------------------------------------------- fingerprint


def test_fingerprint_and_sketch_golden_values() -> None:
    # Fingerprints and sketches live in Redis across deploys: any change to
    # tokenisation, hashing, voting or the sketch's hash family silently breaks
    # comparisons with stored values, so the algorithm is pinned. Update only
    # together with a new index key (FrontierKeys.neardup) and a note.
    sig = signature(PROSE)
    assert sig.simhash == fingerprint(PROSE) == 0xF8335A961E98D541
    assert sig.sketch is not None and len(sig.sketch) == SKETCH_BYTES
    assert sig.sketch[:8].hex() == "014a068b011d001b"
    assert sig.words == len(tokens(PROSE))


def test_fingerprint_is_deterministic_across_processes() -> None:
    code = (
        "from extensions.content.fingerprint import signature; "
        f"s = signature({PROSE!r}); print(s.simhash, s.sketch.hex())"
    )
    outputs = {
        subprocess.run(
            [sys.executable, "-c", code],
            env={"PYTHONHASHSEED": seed, "PYTHONPATH": "."},
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        for seed in ("1", "2")
    }
    sig = signature(PROSE)
    assert outputs == {f"{sig.simhash} {sig.sketch.hex() if sig.sketch else ''}"}


def test_tokens_keep_digits_and_ignore_case_and_punctuation() -> None:
    # lib32 / lib64 pages are different pages (folding digits made them one).
    assert tokens("FIND_LIBRARY_USE_LIB32_PATHS, lib64!") == [
        "find", "library", "use", "lib32", "paths", "lib64",
    ]  # fmt: skip
    noisy = PROSE.upper().replace(" ", "  \n").replace(",", " ,;")
    assert fingerprint(noisy) == fingerprint(PROSE)


def test_empty_text_has_no_signature() -> None:
    assert fingerprint("") == 0 == fingerprint("  -- ... !! ")
    sig = signature(" -- ")
    assert (sig.words, sig.simhash, sig.sketch, sig.text_hash) == (0, None, None, None)


VOCAB = "alpha beta gamma delta epsilon zeta theta kappa lambda sigma 42"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(VOCAB.split()), max_size=300), st.sampled_from([1, 3, 5]))
def test_fast_path_equals_simhash_package(text: list[str], k: int) -> None:
    doc = " ".join(text)
    assert fingerprint(doc, k) == fingerprint_reference(doc, k)


def test_repeated_words_do_not_dominate_the_fingerprint() -> None:
    # Binary shingle weights: a page that repeats its topic word a hundred
    # times is still its own set of phrases plus three (tf weights let the
    # repeated word outvote the rest of the page).
    base = _words(400, 1)
    spammed = base + " kubernetes" * 100
    a, b = signature(base), signature(spammed)
    assert a.simhash is not None and b.simhash is not None and a.sketch and b.sketch
    assert hamming(a.simhash, b.simhash) <= DEFAULT_MAX_DISTANCE
    assert resemblance(a.sketch, b.sketch) >= 0.9
    other = _words(400, 2)
    assert hamming(fingerprint(base), fingerprint(other)) > DEFAULT_MAX_DISTANCE


# ------------------------------------------------------------------- sketch


@pytest.mark.parametrize("edit_share", [0.0, 0.05, 0.2, 0.5, 0.8])
def test_sketch_estimates_five_shingle_resemblance(edit_share: float) -> None:
    words = _words(3000, 3).split()
    rng = random.Random(4)
    edited = list(words)
    for i in rng.sample(range(len(words)), int(edit_share * len(words) / 5)):
        edited[i] = "edited" + str(i)
    a, b = " ".join(words), " ".join(edited)
    truth = jaccard(shingle_set(a), shingle_set(b))
    sa, sb = signature(a).sketch, signature(b).sketch
    assert sa is not None and sb is not None
    # 128 slots: standard error sqrt(J(1-J)/128) <= 0.045; 4 of them as the bound.
    assert abs(resemblance(sa, sb) - truth) <= 0.18
    assert resemblance(sa, sa) == 1.0


def test_sketch_of_unrelated_texts_is_far_below_the_bar() -> None:
    sa, sb = signature(_words(500, 5)).sketch, signature(_words(500, 6)).sketch
    assert sa is not None and sb is not None
    assert resemblance(sa, sb) < DEFAULT_MIN_RESEMBLANCE / 4


def test_text_hash_changes_with_one_word_only() -> None:
    text = _words(800, 7)
    same = signature(text.replace(" ", "  "))
    assert signature(text).text_hash == same.text_hash
    one_sentence = signature(text + " One new sentence was added to the page.")
    assert one_sentence.text_hash != same.text_hash


# ---------------------------------------------------------------- main text


ARTICLE = " ".join(f"Paragraph sentence number {i} explains one more detail." for i in range(40))
DOC_PAGE = f"""<!DOCTYPE html><html><head><title>T</title><script>var x=1;</script></head>
<body><div class="related"><a href="/">index</a> | <a href="/next">next</a></div>
<nav><a>Home</a><a>Docs</a></nav>
<div class="sphinxsidebar" role="navigation"><h3>Quick search</h3>
<ul><li><a>Chapter one</a></li><li><a>Chapter two</a></li></ul></div>
<main><article><h1>Heading</h1><p>{ARTICLE}</p><pre>code sample line</pre></article></main>
<footer>Copyright 2026 Example Project. Created using Sphinx.</footer></body></html>"""


def test_main_text_drops_navigation_sidebar_and_footer() -> None:
    text = page_text(DOC_PAGE)
    assert text.source == "main"
    assert "Paragraph sentence number 39" in text.text and "code sample line" in text.text
    for gone in ("Quick search", "Chapter one", "Copyright", "index | next", "var x"):
        assert gone not in text.text, gone


def test_link_list_pages_fall_back_to_visible_text() -> None:
    links = "".join(f"<li><a href='/p{i}'>entry number {i}</a></li>" for i in range(200))
    page = f"<html><body><h1>Index</h1><ul>{links}</ul></body></html>"
    text = page_text(page)
    assert text.source == "visible"
    assert "entry number 199" in text.text


@pytest.mark.parametrize("html", ["", "   ", b"", "<html></html>", "<!-- only -->"])
def test_page_text_of_empty_documents(html: str | bytes) -> None:
    assert page_text(html).text == ""


def test_page_text_of_hostile_markup_does_not_raise() -> None:
    hostile = "<html><body>" + "<div>" * 5000 + "deep text " * 80 + "</p></td>" * 100
    assert "deep text" in page_text(hostile).text
    assert page_text(b"<p>caf\xe9 " + b"word " * 60).text.startswith("caf")


# ------------------------------------------------------------- visible text


PAGE = """<!DOCTYPE html><html><head><title>Title here</title>
<style>.x{color:red}</style><script>var secret = "script text";</script></head>
<body><header>Site header</header><nav><a>Home</a><a>About</a></nav>
<main><h1>Heading</h1><p>First&nbsp;para<b>graph</b> text.</p><!-- a comment -->
<p>Second   paragraph
   text.</p><div hidden>hidden text</div><noscript>enable js</noscript>
<form><label>Search</label><input></form><svg><text>svg label</text></svg>
<template><p>template text</p></template><aside>Related links</aside>
<p>After aside.</p></main><footer>Copyright footer</footer></body></html>"""


def test_visible_text_strips_boilerplate() -> None:
    text = visible_text(PAGE)
    for gone in ("script", "secret", "color", "header", "Home", "comment", "hidden",
                 "enable", "Search", "svg", "template", "Related", "footer"):  # fmt: skip
        assert gone not in text, gone
    assert text == ("Title here Heading First para graph text. Second paragraph text. After aside.")


def test_visible_text_bytes_and_encodings() -> None:
    latin = "<html><head><meta charset='iso-8859-1'></head><body><p>café</p></body></html>"
    assert visible_text(latin.encode("iso-8859-1")) == "café"
    assert visible_text("<p>café</p>".encode()) == "café"
    xml_decl = '<?xml version="1.0" encoding="utf-8"?><html><body><p>ok</p></body></html>'
    assert visible_text(xml_decl) == "ok"


@pytest.mark.parametrize("html", ["", "   ", b"", "<html></html>", "<!-- only -->"])
def test_visible_text_empty(html: str | bytes) -> None:
    assert visible_text(html) == ""


# ------------------------------------------------------------- content hash


def test_content_hash_folds_whitespace() -> None:
    a = content_hash("a  b\n\tc ")
    assert a == content_hash(b"a b c") == content_hash("a\u00a0b c")
    assert a != content_hash("a b c d")
    assert len(a) == 64


# ------------------------------------------------------------ index planning


@settings(max_examples=300)
@given(st.integers(0, 2**64 - 1), st.data())
def test_block_plan_pigeonhole(fp: int, data: st.DataObject) -> None:
    # Any fingerprint within max_distance shares a probed field in some table.
    for k, m in ((DEFAULT_MAX_DISTANCE, DEFAULT_BLOCKS), (13, 4), (7, 4), (3, 4), (8, 5), (0, 1)):
        blocks = plan_blocks(k, m)
        bits = data.draw(st.lists(st.integers(0, 63), max_size=k, unique=True))
        other = fp
        for b in bits:
            other ^= 1 << b
        assert any(bl.value(other) in bl.probe_values(fp) for bl in blocks)


def test_block_plan_shape() -> None:
    blocks = plan_blocks(DEFAULT_MAX_DISTANCE, DEFAULT_BLOCKS)
    assert [b.width for b in blocks] == [13, 13, 13, 13, 12]
    assert [b.radius for b in blocks] == [2, 2, 2, 2, 1]
    assert sum(len(b.masks) for b in blocks) == 4 * 92 + 13
    assert sum(len(b.masks) for b in plan_blocks(13, 4)) == 2 * 697 + 2 * 137
    assert sum(len(b.masks) for b in plan_blocks(7, 4)) == 4 * 17
    assert [len(b.masks) for b in plan_blocks(3, 4)] == [1, 1, 1, 1]


def test_tokens_split_on_unicode_punctuation_not_on_letters() -> None:
    text = "Café “quoted” — a·b \u00d7 x 、y naïve Straße 東京"
    assert tokens(text) == ["café", "quoted", "a", "b", "x", "y", "naïve", "straße", "東京"]
