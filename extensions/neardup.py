"""Near-duplicate detection: 64-bit simhash fingerprints of page text.

Pipeline: ``visible_text(html)`` (extensions/text.py) -> ``fingerprint(text)``
-> ``SimhashIndex`` (extensions/neardup_index.py, pigeonhole index in Redis).
Exact duplicates are cheaper to catch first with ``content_hash``.

Features are word shingles (SHINGLE_SIZE words; the corpus chose 1) of the
normalised text: lowercased, punctuation dropped, every digit run folded to
``0`` and, with the "content" filter, tokens shorter than 3 characters and
function words dropped, so counters and timestamps move almost nothing and
"the/and/of" do not dominate the tf-weighted vote. A shingle's 64-bit hash
is built from per-token blake2b hashes, so each distinct token is hashed once
per document and the shingle mixing and the bit vote run in numpy. The result is bit-identical to
``simhash.Simhash(features, f=64, hashfunc=shingle_digest)``, which is kept as
the reference (``fingerprint_reference``) and checked against in the tests;
the package's own per-feature Python loop costs ~2x the fast path.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from simhash import Simhash

from extensions.text import fold_whitespace, visible_text

if TYPE_CHECKING:
    from extensions.neardup_index import SimhashIndex

__all__ = [
    "DEFAULT_MAX_DISTANCE",
    "SHINGLE_SIZE",
    "STOPWORDS",
    "TOKEN_FILTER",
    "WEIGHTING",
    "SimhashIndex",
    "content_hash",
    "feature_tokens",
    "fingerprint",
    "fingerprint_reference",
    "hamming",
    "shingle_digest",
    "tokens",
    "visible_text",
]

Weighting = Literal["tf", "binary", "log"]
TokenFilter = Literal["all", "content"]

# Chosen with tests/corpus/neardup_corpus.py (``python -m tests.corpus.neardup_corpus``
# prints the whole sweep: shingle size 1..4 x weighting tf/binary/log x token
# filter all/content, thresholds 0..12). Python 3.11.7: 156 base documents x 7
# pages = 1092 pages, all 595,686 pairs (3,276 positive). Shipped row:
#   words, tf, content tokens, d<=7: precision 1.0000 recall 0.9673 (fp 0, fn 107)
# Feasible band (precision >= 0.99, recall >= 0.95) for this setting: d in 7..11
# (d<=6 recall 0.9365; first false positive at d<=10). Every shingled setting
# (k >= 2) needs d >= 11 for that recall, because a 64-bit simhash moves ~5
# bits for a 3% feature change and a 2% word edit changes k x 2% of k-shingles;
# d >= 11 would also make the index impractical. 7 rather than the band's middle
# (9): with the corpus cut log-uniformly (longer pages, SKEW=1.0) the band is
# 6..7 -- topical neighbours (two logging how-tos) reach d=7 -- so 7 is the one
# threshold that passes both cuts, and the cheaper one to index (68 look-ups).
SHINGLE_SIZE = 1
WEIGHTING: Weighting = "tf"
TOKEN_FILTER: TokenFilter = "content"
DEFAULT_MAX_DISTANCE = 7

# "content" tokens: at least 3 characters and not a function word. Function
# words are the most frequent tokens of any page, so under tf weighting they
# would dominate the vote and pull unrelated pages of one language together
# (the corpus shows it: all tokens + tf has precision 0.33 at distance 3).
# English is what the corpus measures; the most frequent 3+ letter function
# words of de/fr/es/it/pt/nl are listed too (unmeasured, but without them the
# same collapse would hit those languages), minus words that are English
# content words (die, come, son, plus, per, van...).
MIN_TOKEN_LENGTH = 3
_STOPWORD_TEXT = """
    the and for are but not you all any can had her was one our out has him his how
    its may new now old see two way who did get let put say she too use also been
    from have here into just more most much must only other over same some such
    than that their them then there these they this those very what when where
    which while whom whose why will with would could should shall about above
    after again against because before being below between both does doing down
    during each few further itself myself once own under until upon yet yes off
    nor per via etc
    der das und ist ein eine einer eines einem einen nicht sich mit von auf für
    auch als bei nach wie oder aber wenn noch nur zum zur über unter werden wird
    wurde sind hat haben kann den dem des sie
    les une est que qui dans pour pas par sur avec sont ont aux ses leur cette
    mais comme été être
    del los las una por para como más pero sus este esta está entre cuando muy
    sin sobre también hasta donde
    della delle degli dei gli che non sono nel nella alla anche più dal dalla uno
    não uma com mais dos ele ela foi pelo pela
    het een zijn niet maar voor ook dat deze wordt worden naar bij aan uit
"""
STOPWORDS: frozenset[str] = frozenset(_STOPWORD_TEXT.split())

_DIGITS = re.compile(r"\d+")
# Letters and digits only: punctuation and "_" separate tokens.
_TOKEN = re.compile(r"[^\W_]+")

_MASK64 = (1 << 64) - 1
_ROTATE = 21  # shingle position j is rotated by 21*j bits before xor-ing
_MIX1 = 0xBF58476D1CE4E5B9  # splitmix64 finaliser constants
_MIX2 = 0x94D049BB133111EB


def tokens(text: str) -> list[str]:
    """Lowercased words and numbers, punctuation dropped, digit runs -> ``0``."""
    return _TOKEN.findall(_DIGITS.sub("0", text.lower()))


def feature_tokens(text: str, token_filter: TokenFilter = TOKEN_FILTER) -> list[str]:
    """The tokens that become features (see STOPWORDS for the "content" filter)."""
    words = tokens(text)
    if token_filter == "all":
        return words
    return [w for w in words if len(w) >= MIN_TOKEN_LENGTH and w not in STOPWORDS]


def hamming(a: int, b: int) -> int:
    """Number of differing bits between two fingerprints."""
    return (a ^ b).bit_count()


def content_hash(text_or_body: str | bytes) -> str:
    """sha256 hex of the whitespace-folded body, for exact-duplicate checks.

    Bytes are decoded as UTF-8 with surrogateescape, so a UTF-8 body and its
    decoded text hash the same and no input is rejected.
    """
    if isinstance(text_or_body, bytes):
        text_or_body = text_or_body.decode("utf-8", "surrogateescape")
    folded = fold_whitespace(text_or_body)
    return hashlib.sha256(folded.encode("utf-8", "surrogateescape")).hexdigest()


def _token_hash(token: str) -> int:
    digest = hashlib.blake2b(token.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def _mix64(x: int) -> int:
    x ^= x >> 30
    x = (x * _MIX1) & _MASK64
    x ^= x >> 27
    x = (x * _MIX2) & _MASK64
    return x ^ (x >> 31)


def shingle_digest(shingle: bytes) -> bytes:
    """8-byte hash of one shingle (UTF-8 tokens joined by single spaces).

    xor of the tokens' blake2b hashes, each rotated by its position so that
    "a b" and "b a" differ, then a splitmix64 finaliser to spread the bits.
    This is the hashfunc handed to ``simhash.Simhash`` by the reference path.
    """
    x = 0
    for j, token in enumerate(shingle.split(b" ")):
        h = int.from_bytes(hashlib.blake2b(token, digest_size=8).digest(), "big")
        r = (_ROTATE * j) % 64
        x ^= ((h << r) | (h >> (64 - r))) & _MASK64 if r else h
    return _mix64(x).to_bytes(8, "big")


def _weights(counts: np.ndarray, weighting: Weighting) -> np.ndarray:
    if weighting == "tf":
        return counts
    if weighting == "binary":
        return np.ones_like(counts)
    return 1.0 + np.log(counts)


def _shingle_hashes(words: Sequence[str], k: int) -> np.ndarray:
    """uint64 hash of every k-word window (one window if the text is shorter)."""
    vocab: dict[str, int] = {}
    ids = np.fromiter((vocab.setdefault(w, len(vocab)) for w in words), np.intp, len(words))
    per_token = np.fromiter((_token_hash(w) for w in vocab), np.uint64, len(vocab))
    h = per_token[ids]
    n = max(len(h) - k + 1, 1)
    x = h[:n].copy()
    for j in range(1, min(k, len(h))):
        r = np.uint64((_ROTATE * j) % 64)
        x ^= (h[j : j + n] << r) | (h[j : j + n] >> (np.uint64(64) - r))
    # splitmix64 finaliser; uint64 multiplication wraps mod 2**64 as wanted.
    x ^= x >> np.uint64(30)
    x *= np.uint64(_MIX1)
    x ^= x >> np.uint64(27)
    x *= np.uint64(_MIX2)
    x ^= x >> np.uint64(31)
    return x


def fingerprint(
    text: str,
    *,
    shingle_size: int = SHINGLE_SIZE,
    weighting: Weighting = WEIGHTING,
    token_filter: TokenFilter = TOKEN_FILTER,
) -> int:
    """64-bit simhash of already-extracted text (see ``visible_text``).

    Bit b is set when the features whose hash has bit b set carry more than
    half of the total weight, exactly as ``simhash.Simhash`` votes.
    """
    words = feature_tokens(text, token_filter)
    if not words:
        return 0
    hashes, counts = np.unique(_shingle_hashes(words, shingle_size), return_counts=True)
    weights = _weights(counts, weighting)
    # Big-endian bytes -> unpackbits puts bit 63 first, like simhash does.
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8)).reshape(-1, 64)
    votes = weights @ bits
    packed = np.packbits(votes * 2 > weights.sum()).tobytes()
    return int.from_bytes(packed, "big")


def shingles(words: Sequence[str], k: int) -> list[str]:
    """The k-word windows of ``words`` as space-joined strings."""
    return [" ".join(words[i : i + k]) for i in range(max(len(words) - k + 1, 1))]


def fingerprint_reference(
    text: str,
    *,
    shingle_size: int = SHINGLE_SIZE,
    weighting: Weighting = WEIGHTING,
    token_filter: TokenFilter = TOKEN_FILTER,
) -> int:
    """Same value as ``fingerprint`` computed by the ``simhash`` package (slow)."""
    words = feature_tokens(text, token_filter)
    if not words:
        return 0
    counts = Counter(shingles(words, shingle_size))
    features: list[tuple[str, Any]]
    if weighting == "tf":
        # simhash multiplies a uint8 bit array by int weights: > 255 overflows
        # (numpy 2 raises), so large counts go through its float path instead.
        features = [(s, c if c <= 50 else float(c)) for s, c in counts.items()]
    elif weighting == "binary":
        features = [(s, 1) for s in counts]
    else:
        features = [(s, 1.0 + math.log(c)) for s, c in counts.items()]
    return int(Simhash(features, f=64, hashfunc=shingle_digest).value)


def __getattr__(name: str) -> Any:
    # The index lives in its own module (it imports the constants above); it
    # is re-exported lazily so that importing this module needs no redis.
    if name == "SimhashIndex":
        from extensions.neardup_index import SimhashIndex

        return SimhashIndex
    raise AttributeError(name)
