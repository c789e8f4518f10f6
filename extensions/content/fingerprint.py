"""Fingerprints of page text: a 64-bit simhash that proposes, a sketch that confirms.

Pipeline: ``page_text(html)`` (main_text.py) -> ``signature(text)``:

- ``simhash``: 64-bit simhash over the set of SIMHASH_SHINGLE-word shingles,
  each distinct shingle one vote (binary weights), so a word or phrase a page
  repeats ("the", a product name on a site about it) counts once and the
  shared vocabulary of a one-topic site no longer dominates the vote. Its only
  job is to find candidates in the Redis index within NEARDUP_MAX_DISTANCE bits.
- ``sketch``: SKETCH_SIZE MinHash values (16 bits each) of the set of
  SKETCH_SHINGLE-word shingles: the fraction of equal slots of two sketches
  estimates their 5-shingle resemblance (Jaccard), the measure the labelled
  corpora are judged by. A candidate becomes a near duplicate only when the
  estimate reaches NEARDUP_MIN_RESEMBLANCE; a page is never dropped on the
  simhash alone.
- ``text_hash``: sha256 of the (whitespace-folded) text: a re-fetch with the same main
  text is unchanged (a new ad or timestamp outside it is not a change), any
  other one changed, however close its simhash.

Tokens are lowercased letter/digit runs (see _spans). Digits are kept: folding them (as the
previous fingerprint did, for counters) made ``FIND_LIBRARY_USE_LIB32_PATHS``
and ``..._LIB64_PATHS`` the same page; counters now sit mostly in the furniture
the main-content extractor removes. The shingle size and the thresholds were
chosen on three labelled corpora (tests/corpus/evaluate.py prints the sweep;
bench/README.md has the tables): 3-word shingles propose 2-4% more true pairs
than 4 or 5 at the same index cost, 5-word shingles for the sketch track the
labels exactly (3-word resemblance overrates template-family pages).

Hashing: a token's hash is a polynomial hash of its bytes mod 2^64 (computed
for the whole page from prefix sums, numpy); a shingle's hash mixes its
tokens' hashes rotated by position through a splitmix64 finaliser.
``fingerprint_reference`` computes the same simhash with the ``simhash``
package for the tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from simhash import Simhash

from extensions.content.visible_text import fold_whitespace

SIMHASH_SHINGLE = 3
SKETCH_SHINGLE = 5
SKETCH_SIZE = 128  # MinHash slots; 16 bits each -> 256 bytes per indexed page
SKETCH_BYTES = 2 * SKETCH_SIZE

# Bytes that belong to tokens: ASCII letters and digits, and every byte of a
# non-ASCII character (its punctuation is cut out again in _spans).
_WORD_BYTE = np.zeros(256, dtype=bool)
_WORD_BYTE[list(b"abcdefghijklmnopqrstuvwxyz0123456789")] = True
_WORD_BYTE[0x80:] = True
_POLY = 0x9E3779B97F4A7C15  # odd, so invertible mod 2^64
_POLY_INV = pow(_POLY, -1, 1 << 64)
_POWERS: tuple[np.ndarray, np.ndarray] = (np.empty(0, np.uint64), np.empty(0, np.uint64))
# Entries of _POWERS kept between pages (16 B each: 4 MiB). Kept at the longest text seen,
# one multi-MB page held its table (256 MiB for a 10 MB text) for the rest of the crawl;
# a text past this builds its own from the kept one (~10 ms per MiB of text, rare pages).
POWERS_KEPT = 1 << 18

_MASK64 = (1 << 64) - 1
_ROTATE = 21  # shingle position j is rotated by 21*j bits before xor-ing
_MIX1 = 0xBF58476D1CE4E5B9  # splitmix64 finaliser constants
_MIX2 = 0x94D049BB133111EB
_GOLDEN = 0x9E3779B97F4A7C15
_SKETCH_CHUNK = 512  # shingles per block of the (shingles x slots) min: 512 KB


def _splitmix(state: int) -> int:
    x = (state + _GOLDEN) & _MASK64
    x = ((x ^ (x >> 30)) * _MIX1) & _MASK64
    x = ((x ^ (x >> 27)) * _MIX2) & _MASK64
    return x ^ (x >> 31)


# The sketch's multipliers: fixed constants (stored sketches are compared
# across processes and deploys; a golden test pins them).
_A = np.array([_splitmix(i) | 1 for i in range(SKETCH_SIZE)], dtype=np.uint64)


@dataclass(frozen=True)
class TextSignature:
    words: int  # tokens of the text
    text_hash: str | None  # sha256 of the folded text; None for no text
    simhash: int | None  # None for no text
    sketch: bytes | None  # SKETCH_BYTES; None for no text


def _spans(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(lowercased UTF-8 bytes, token starts, token ends inclusive) of a text.

    A token is a run of ASCII letters and digits and non-ASCII characters,
    except the non-ASCII punctuation and symbols (U+0080-U+00BF, U+00D7,
    U+00F7, U+2000-U+2FFF, U+3000-U+303F), which separate like ASCII
    punctuation and "_". Done on bytes with numpy: ~5x a regex plus a hash call
    per token, and the throughput budget is 2 ms per page for everything.
    """
    data = np.frombuffer(text.lower().encode("utf-8", "surrogatepass"), np.uint8)
    word = _WORD_BYTE[data]
    if len(data) > 1 and not text.isascii():
        lead, nxt, last = data[:-1], data[1:], len(data) - 1
        two = np.nonzero((lead == 0xC2) | ((lead == 0xC3) & ((nxt == 0x97) | (nxt == 0xB7))))[0]
        three = np.nonzero((lead == 0xE2) | ((lead == 0xE3) & (nxt == 0x80)))[0]
        for width, at in ((2, two), (3, three)):
            for k in range(width):
                word[np.minimum(at + k, last)] = False
    edges = np.diff(word.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    return data, np.nonzero(edges == 1)[0], np.nonzero(edges == -1)[0] - 1


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """P^i and P^-i mod 2^64 for i < n (cached up to POWERS_KEPT, grown by doubling)."""
    global _POWERS
    if len(_POWERS[0]) >= n:
        return _POWERS
    size = 1 << max(16, (n - 1).bit_length())
    if size <= POWERS_KEPT:
        up = np.full(size, _POLY, dtype=np.uint64)
        down = np.full(size, _POLY_INV, dtype=np.uint64)
        up[0] = down[0] = 1
        _POWERS = (np.cumprod(up, dtype=np.uint64), np.cumprod(down, dtype=np.uint64))
        return _POWERS
    # A longer text's own table, not kept: block q of it is the kept table times
    # P^(q * POWERS_KEPT) (one multiply per entry, uint64 wraps mod 2^64 as pow does).
    kept, blocks = _powers(POWERS_KEPT), range(size // POWERS_KEPT)
    up, down = (
        np.multiply.outer(
            np.array([pow(base, q * POWERS_KEPT, 1 << 64) for q in blocks], np.uint64), table
        ).ravel()
        for base, table in zip((_POLY, _POLY_INV), kept, strict=True)
    )
    return up, down


def _finish_token(h: np.ndarray, length: np.ndarray) -> np.ndarray:
    h = h + length.astype(np.uint64) * np.uint64(_MIX1)
    h ^= h >> np.uint64(31)
    h *= np.uint64(_MIX2)
    h ^= h >> np.uint64(29)
    return h


def tokens(text: str) -> list[str]:
    """Lowercased tokens (see _spans); what the fingerprints are made of."""
    data, starts, ends = _spans(text)
    raw = data.tobytes()
    return [
        raw[a : b + 1].decode("utf-8", "surrogatepass") for a, b in zip(starts, ends, strict=True)
    ]


def token_hashes(text: str) -> np.ndarray:
    """uint64 hash of every token of text, in order: a polynomial hash of its
    bytes mod 2^64 computed from prefix sums (one numpy pass for the page)."""
    data, starts, ends = _spans(text)
    if not len(starts):
        return np.empty(0, np.uint64)
    up, down = _powers(len(data))
    prefix = np.cumsum((data.astype(np.uint64) + np.uint64(1)) * down[: len(data)], dtype=np.uint64)
    before = np.where(starts > 0, prefix[np.maximum(starts - 1, 0)], np.uint64(0))
    return _finish_token((prefix[ends] - before) * up[ends], ends - starts + 1)


def _token_hash(token: bytes) -> int:
    """Scalar twin of token_hashes for one token's UTF-8 bytes."""
    h = 0
    for byte in token:
        h = (h * _POLY + byte + 1) & _MASK64
    out = _finish_token(np.array([h], dtype=np.uint64), np.array([len(token)]))
    return int(out[0])


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


def _mix64(x: int) -> int:
    x ^= x >> 30
    x = (x * _MIX1) & _MASK64
    x ^= x >> 27
    x = (x * _MIX2) & _MASK64
    return x ^ (x >> 31)


def shingle_digest(shingle: bytes) -> bytes:
    """8-byte hash of one shingle (UTF-8 tokens joined by single spaces); the
    scalar twin of ``shingle_hashes``, handed to ``simhash.Simhash`` by the reference."""
    x = 0
    for j, token in enumerate(shingle.split(b" ")):
        h = _token_hash(token)
        r = (_ROTATE * j) % 64
        x ^= ((h << r) | (h >> (64 - r))) & _MASK64 if r else h
    return _mix64(x).to_bytes(8, "big")


def shingle_hashes(h: np.ndarray, k: int, distinct: bool = True) -> np.ndarray:
    """uint64 hashes of every k-token window of token hashes h (one window if
    there are fewer than k tokens): sorted and distinct, or with distinct=False
    in text order with repeats (enough for a MinHash: repeats do not move a
    minimum, and skipping the sort saves a tenth of the signature's time)."""
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
    return np.unique(x) if distinct else x


def simhash_of(hashes: np.ndarray) -> int:
    """Binary-weighted simhash: bit b set when more than half the features set it
    (as ``simhash.Simhash`` votes, every feature weight 1)."""
    if not len(hashes):
        return 0
    # Big-endian bytes -> unpackbits puts bit 63 first, like simhash does.
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8)).reshape(-1, 64)
    votes = bits.sum(axis=0, dtype=np.int64)
    return int.from_bytes(np.packbits(votes * 2 > len(hashes)).tobytes(), "big")


def sketch_of(hashes: np.ndarray) -> bytes:
    """SKETCH_SIZE MinHash slots (top 16 bits of each minimum, big-endian)."""
    mins = np.full(SKETCH_SIZE, np.iinfo(np.uint64).max, dtype=np.uint64)
    for start in range(0, len(hashes), _SKETCH_CHUNK):
        # h_i(x) = a_i * x mod 2^64 (a_i odd): x is already a mixed 64-bit hash,
        # so one multiply per slot is the permutation; blocks stay in cache.
        block = np.multiply(hashes[start : start + _SKETCH_CHUNK, None], _A[None, :])
        np.minimum(mins, block.min(axis=0), out=mins)
    # The minimum is taken on the full 64 bits, then 16 bits are kept: two
    # different minima agree by chance 1/65536 of the time (b-bit minwise
    # hashing), negligible against a bar of 0.65.
    return (mins >> np.uint64(48)).astype(">u2").tobytes()


def resemblance(a: bytes, b: bytes) -> float:
    """Estimated Jaccard resemblance of the shingle sets behind two sketches."""
    x = np.frombuffer(a, dtype=">u2")
    y = np.frombuffer(b, dtype=">u2")
    return float(np.count_nonzero(x == y)) / SKETCH_SIZE


def signature(text: str) -> TextSignature:
    """Every content fingerprint of an already extracted text (see page_text)."""
    h = token_hashes(text)
    if not len(h):
        return TextSignature(0, None, None, None)
    # Folded again for callers that pass raw text; on page_text's (folded) output a
    # split and join costs a quarter of a regex scan for unfolded whitespace.
    folded_utf8 = fold_whitespace(text).encode("utf-8", "surrogatepass")
    return TextSignature(
        words=len(h),
        text_hash=hashlib.sha256(folded_utf8).hexdigest(),
        simhash=simhash_of(shingle_hashes(h, SIMHASH_SHINGLE)),
        sketch=sketch_of(shingle_hashes(h, SKETCH_SHINGLE, distinct=False)),
    )


def fingerprint(text: str, shingle_size: int = SIMHASH_SHINGLE) -> int:
    """The 64-bit simhash of a text (0 for a text without tokens)."""
    h = token_hashes(text)
    if not len(h):
        return 0
    return simhash_of(shingle_hashes(h, shingle_size))


def shingles(words: Sequence[str], k: int) -> list[str]:
    """The k-word windows of ``words`` as space-joined strings."""
    return [" ".join(words[i : i + k]) for i in range(max(len(words) - k + 1, 1))]


def fingerprint_reference(text: str, shingle_size: int = SIMHASH_SHINGLE) -> int:
    """Same value as ``fingerprint`` computed by the ``simhash`` package (slow)."""
    words = tokens(text)
    if not words:
        return 0
    features = [(s, 1) for s in set(shingles(words, shingle_size))]
    return int(Simhash(features, f=64, hashfunc=shingle_digest).value)
