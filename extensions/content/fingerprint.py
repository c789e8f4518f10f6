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

Tokens are lowercased letter/digit runs. Digits are kept: folding them (as the
previous fingerprint did, for counters) made ``FIND_LIBRARY_USE_LIB32_PATHS``
and ``..._LIB64_PATHS`` the same page; counters now sit mostly in the furniture
the main-content extractor removes. The shingle size and the thresholds were
chosen on three labelled corpora (tests/corpus/evaluate.py prints the sweep;
bench/README.md has the tables): 3-word shingles propose 2-4% more true pairs
than 4 or 5 at the same index cost, 5-word shingles for the sketch track the
labels exactly (3-word resemblance overrates template-family pages).

Hashing: every distinct token is hashed once (blake2b, 8 bytes); a shingle's
hash mixes its tokens' hashes rotated by position through a splitmix64
finaliser (numpy, vectorised). ``simhash_reference`` computes the same simhash
with the ``simhash`` package for the tests.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from simhash import Simhash

from extensions.content.visible_text import fold_whitespace

SIMHASH_SHINGLE = 3
SKETCH_SHINGLE = 5
SKETCH_SIZE = 128  # MinHash slots; 16 bits each -> 256 bytes per indexed page
SKETCH_BYTES = 2 * SKETCH_SIZE

# Letters and digits only: punctuation and "_" separate tokens.
_TOKEN = re.compile(r"[^\W_]+")

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


def tokens(text: str) -> list[str]:
    """Lowercased runs of letters and digits (punctuation and "_" separate)."""
    return _TOKEN.findall(text.lower())


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
    """8-byte hash of one shingle (UTF-8 tokens joined by single spaces); the
    scalar twin of ``shingle_hashes``, handed to ``simhash.Simhash`` by the reference."""
    x = 0
    for j, token in enumerate(shingle.split(b" ")):
        h = int.from_bytes(hashlib.blake2b(token, digest_size=8).digest(), "big")
        r = (_ROTATE * j) % 64
        x ^= ((h << r) | (h >> (64 - r))) & _MASK64 if r else h
    return _mix64(x).to_bytes(8, "big")


def token_hashes(words: Sequence[str]) -> np.ndarray:
    """uint64 blake2b hash of every token, each distinct token hashed once."""
    vocab = list(dict.fromkeys(words))
    digests = b"".join(
        hashlib.blake2b(w.encode("utf-8", "surrogatepass"), digest_size=8).digest() for w in vocab
    )
    per_token = np.frombuffer(digests, dtype=">u8").astype(np.uint64)
    index = dict(zip(vocab, range(len(vocab)), strict=True))
    ids = np.fromiter(map(index.__getitem__, words), np.intp, len(words))
    return per_token[ids]


def shingle_hashes(h: np.ndarray, k: int) -> np.ndarray:
    """Sorted distinct uint64 hashes of every k-token window of token hashes h
    (one window if there are fewer than k tokens)."""
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
    return np.unique(x)


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
    words = tokens(text)
    if not words:
        return TextSignature(0, None, None, None)
    h = token_hashes(words)
    return TextSignature(
        words=len(words),
        text_hash=hashlib.sha256(
            fold_whitespace(text).encode("utf-8", "surrogatepass")
        ).hexdigest(),
        simhash=simhash_of(shingle_hashes(h, SIMHASH_SHINGLE)),
        sketch=sketch_of(shingle_hashes(h, SKETCH_SHINGLE)),
    )


def fingerprint(text: str, shingle_size: int = SIMHASH_SHINGLE) -> int:
    """The 64-bit simhash of a text (0 for a text without tokens)."""
    words = tokens(text)
    if not words:
        return 0
    return simhash_of(shingle_hashes(token_hashes(words), shingle_size))


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
