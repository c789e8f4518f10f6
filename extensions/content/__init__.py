"""The content stage: what a fetched page says, and whether the crawl has it already.

    main_text.py      the page's main content (resiliparse), visible text as fallback
    visible_text.py   reader-visible text of HTML (lxml), boilerplate tags removed
    fingerprint.py    tokens, word shingles, 64-bit simhash, MinHash sketch, hashes
    simhash_index.py  shared simhash index in Redis with sketch verification (+ lua/)
    simhash_keys.py   where the index's keys live: a commit ring, the rest in page shards

A page is a near duplicate only when the simhash index proposes a candidate
(Hamming distance <= NEARDUP_MAX_DISTANCE) AND the candidate's stored sketch
confirms it (estimated 5-shingle resemblance >= NEARDUP_MIN_RESEMBLANCE).
"""
