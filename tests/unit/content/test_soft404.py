"""The soft-404 measure (extensions/content/soft404.py) on labelled pages, and the
shared origin states (soft404_states.py) on a real Redis with a virtual clock."""

from __future__ import annotations

import re

import pytest
import redis

import crawlproj.settings
from extensions.content import soft404_states
from extensions.content.fingerprint import content_hash
from extensions.content.main_text import page_text
from extensions.content.soft404 import (
    MIN_OWN_WORDS,
    PROBE_SUFFIX,
    NotFoundPrint,
    judge,
    learn,
    learn_second,
    origin_of,
    page_words,
    probe_url,
    reference_words,
    text_phrases,
)
from extensions.content.soft404 import reference as reference_of
from extensions.content.soft404_states import (
    CLAIM_RECHECK_S,
    CLAIMED,
    HONEST,
    SOFT,
    OriginState,
    OriginStates,
)
from tests.unit.content import soft404_pages as corpus

THRESHOLD = crawlproj.settings.SOFT404_MIN_RESEMBLANCE
ORIGIN = "http://site.test"
PROBE = f"{ORIGIN}/0123456789abcdef{PROBE_SUFFIX}"
TEXT_KINDS = [k for k in corpus.KINDS if k != "home"]


def fingerprint(site: str, kind: str, reference: str = "home") -> NotFoundPrint:
    ref_html = corpus.real_pages(site)[reference]
    ref_url = f"{ORIGIN}/" if reference == "home" else f"{ORIGIN}/{reference}"
    answer = page_words(corpus.not_found(site, kind, PROBE.removeprefix(ORIGIN), 1), PROBE)
    return learn(answer, reference_words(ref_html, ref_url), "")


def is_soft(print_: NotFoundPrint, html: str, url: str, duplicate: bool = False) -> bool:
    return judge(print_, page_words(html, url), url, url, THRESHOLD, duplicate)


@pytest.mark.parametrize("site", corpus.SITES)
@pytest.mark.parametrize("kind", TEXT_KINDS)
def test_every_not_found_variant_is_a_soft_404_and_no_real_page_is(site: str, kind: str) -> None:
    """Each real page of the site as the reference (the first page the crawl saw)."""
    for reference in corpus.real_pages(site):
        print_ = fingerprint(site, kind, reference)
        assert print_.by_text, (site, kind, reference)
        for path in corpus.MISSING_PATHS:
            html = corpus.not_found(site, kind, path, seed=2)
            score = print_.resemblance(page_words(html, ORIGIN + path))
            assert is_soft(print_, html, ORIGIN + path), (reference, path, score)
        for name, html in corpus.real_pages(site).items():
            url = f"{ORIGIN}/pages/{name}"
            score = print_.resemblance(page_words(html, url))
            assert not is_soft(print_, html, url), (reference, name, score)


def test_the_threshold_sits_between_the_variants_and_the_real_pages() -> None:
    """Margins of SOFT404_MIN_RESEMBLANCE on the whole corpus (the settings.py comment):
    the least alike not-found answer and the most alike real page, the home-page
    answer (a real page served for every path, its reference another page) included."""
    lowest, highest = 1.0, 0.0
    for site in corpus.SITES:
        for reference in corpus.real_pages(site):
            for kind in corpus.KINDS:
                print_ = fingerprint(site, kind, reference)
                if not print_.by_text:
                    continue
                for path in corpus.MISSING_PATHS if kind != "home" else ():
                    html = corpus.not_found(site, kind, path, seed=2)
                    lowest = min(lowest, print_.resemblance(page_words(html, ORIGIN + path)))
                for name, html in corpus.real_pages(site).items():
                    if name not in (reference, "home"):
                        words = page_words(html, f"{ORIGIN}/{name}")
                        highest = max(highest, print_.resemblance(words))
    assert highest + 0.1 < THRESHOLD < lowest, (highest, lowest)
    assert (round(lowest, 2), round(highest, 2)) == (0.67, 0.47)


MIN_CONTAINMENT = crawlproj.settings.SOFT404_MIN_CONTAINMENT
SECOND_PROBE = f"{ORIGIN}/fedcba9876543210{PROBE_SUFFIX}"


def templated(site: str, kind: str, reference: str) -> NotFoundPrint:
    """The print after both probes: the template is what their answers share."""
    ref_html = corpus.real_pages(site)[reference]
    ref_url = f"{ORIGIN}/" if reference == "home" else f"{ORIGIN}/{reference}"
    first = corpus.not_found(site, kind, PROBE.removeprefix(ORIGIN), 1)
    second = corpus.not_found(site, kind, SECOND_PROBE.removeprefix(ORIGIN), 3)
    said = text_phrases(page_text(first).text, PROBE)
    print_ = learn(
        page_words(first, PROBE), reference_words(ref_html, ref_url), "", "",
        (said, reference_of(page_text(ref_html).text, ref_html, ref_url)[1]),
    )  # fmt: skip
    return learn_second(print_, text_phrases(page_text(second).text, SECOND_PROBE))


def containment(print_: NotFoundPrint, html: str, url: str) -> float:
    return print_.containment(frozenset(text_phrases(page_text(html).text, url)))


def test_the_template_rule_marks_answers_with_words_of_their_own() -> None:
    """Margins of SOFT404_MIN_CONTAINMENT over every text kind, chatty ones included, and
    every reference page: the least contained not-found answer, the most contained real
    page (excerpts of the site's own articles in the answer included)."""
    lowest, highest = 1.0, 0.0
    for site in corpus.SITES:
        for kind in (*TEXT_KINDS, *corpus.CHATTY_KINDS):
            for reference in corpus.real_pages(site):
                print_ = templated(site, kind, reference)
                assert print_.by_template, (site, kind, reference)
                for path in corpus.MISSING_PATHS:
                    html = corpus.not_found(site, kind, path, seed=2)
                    lowest = min(lowest, containment(print_, html, ORIGIN + path))
                for name, html in corpus.real_pages(site).items():
                    if name not in (reference, "home"):
                        highest = max(highest, containment(print_, html, f"{ORIGIN}/{name}"))
    assert highest + 0.2 < MIN_CONTAINMENT < lowest, (highest, lowest)
    assert (round(lowest, 2), round(highest, 2)) == (0.5, 0.15)


@pytest.mark.parametrize("site", corpus.SITES)
@pytest.mark.parametrize("kind", corpus.CHATTY_KINDS)
def test_answers_with_words_of_their_own_are_soft_404s_by_their_template(
    site: str, kind: str
) -> None:
    print_ = templated(site, kind, "home")
    for path in corpus.MISSING_PATHS:
        html, url = corpus.not_found(site, kind, path, seed=2), ORIGIN + path
        phrases = frozenset(text_phrases(page_text(html).text, url))
        words = page_words(html, url)
        assert judge(print_, words, url, url, THRESHOLD, False, "", (phrases, MIN_CONTAINMENT))
    for name, html in corpus.real_pages(site).items():
        url = f"{ORIGIN}/pages/{name}"
        phrases = frozenset(text_phrases(page_text(html).text, url))
        page = page_words(html, url)
        assert not judge(print_, page, url, url, THRESHOLD, False, "", (phrases, MIN_CONTAINMENT))


@pytest.mark.parametrize("site", corpus.SITES)
def test_a_host_serving_its_home_page_for_every_path_is_not_judged_by_text(site: str) -> None:
    print_ = fingerprint(site, "home")
    assert len(print_.own) < MIN_OWN_WORDS and not print_.by_text
    for path in corpus.MISSING_PATHS:
        assert not is_soft(print_, corpus.home(site), ORIGIN + path)


@pytest.mark.parametrize("site", corpus.SITES)
def test_a_host_serving_its_home_page_for_every_path_is_judged_by_its_bytes(site: str) -> None:
    """The answer has no words of its own, but a page whose body is the answer's byte
    for byte (a single-page app's index.html) is a soft-404, anywhere but the root."""
    home = corpus.home(site)
    answer = page_words(home, PROBE)
    ref = reference_words(home, f"{ORIGIN}/")
    print_ = learn(answer, ref, "", content_hash(home))
    assert not print_.by_text and print_.body_hash == content_hash(home)
    for path in corpus.MISSING_PATHS:
        url = ORIGIN + path
        words = page_words(home, url)
        assert judge(print_, words, url, url, THRESHOLD, True, content_hash(home))
    assert not judge(
        print_, answer, f"{ORIGIN}/", f"{ORIGIN}/", THRESHOLD, True, content_hash(home)
    )
    # A page that differs by a byte is judged as before: by its words, here not at all.
    other = home.replace("</body>", "<p>x</p></body>")
    url = f"{ORIGIN}/about"
    assert not judge(
        print_, page_words(other, url), url, url, THRESHOLD, False, content_hash(other)
    )
    # A redirected probe's answer is a real page: its bytes mark nothing.
    redirected = learn(answer, ref, f"{ORIGIN}/", content_hash(home))
    assert redirected.body_hash == ""


@pytest.mark.parametrize("site", corpus.SITES)
def test_the_home_page_is_never_a_soft_404(site: str) -> None:
    """The home answer learnt against another reference looks like the home page."""
    print_ = fingerprint(site, "home", reference="contact")
    assert print_.by_text
    home = corpus.home(site)
    assert print_.resemblance(page_words(home, f"{ORIGIN}/")) == 1.0
    assert not is_soft(print_, home, f"{ORIGIN}/", duplicate=True)
    assert not judge(print_, page_words(home, ORIGIN), ORIGIN, f"{ORIGIN}/", THRESHOLD, True)
    # Nor is its content reached by a redirect (the only fetch of the home page, if the
    # frontier admitted the redirect target as "/").
    words = page_words(home, f"{ORIGIN}/index.html")
    assert print_.resemblance(words) == 1.0
    assert not judge(print_, words, f"{ORIGIN}/index.html", f"{ORIGIN}/", THRESHOLD, False)
    # The same content at another path is the host's answer.
    assert is_soft(print_, home, f"{ORIGIN}/no/such/page")


def test_the_echoed_path_and_per_request_numbers_do_not_count() -> None:
    echo = PROBE.removeprefix(ORIGIN)
    print_ = learn(page_words(f"<p>Nothing at {echo}. Ref 83f1 at 12:01.</p>", PROBE), None, "")
    assert print_.furniture == {"nothing", "at", "ref"}
    words = page_words("<p>Nothing at /gone/page. Ref 9c2e at 23:59.</p>", f"{ORIGIN}/gone/page")
    assert words == {"nothing", "at", "ref"}


def test_without_a_reference_page_only_the_redirect_rule_applies() -> None:
    answer = page_words(corpus.not_found("divs", "plain", "/x", 1), PROBE)
    print_ = learn(answer, None, "")
    assert print_.own == set() and print_.furniture == answer and not print_.by_text
    page = corpus.not_found("divs", "plain", "/y", 1)
    assert not is_soft(print_, page, f"{ORIGIN}/y")


def test_redirect_rule_later_copies_reaching_the_probes_final_url() -> None:
    print_ = learn(frozenset({"welcome", "walks"}), frozenset(), final_url=f"{ORIGIN}/")
    assert print_ == NotFoundPrint(f"{ORIGIN}/", frozenset(), frozenset())  # no text rule
    none: frozenset[str] = frozenset()

    def soft(requested: str, final: str, duplicate: bool = True) -> bool:
        return judge(print_, none, requested, final, THRESHOLD, duplicate)

    assert soft(f"{ORIGIN}/missing", f"{ORIGIN}/")
    assert soft(f"{ORIGIN}/index.html", f"{ORIGIN}/")
    # The first copy is kept: it may be the home page's only fetch.
    assert not soft(f"{ORIGIN}/missing", f"{ORIGIN}/", duplicate=False)
    # The root itself, asked for directly or over another spelling, is the site.
    assert not soft(f"{ORIGIN}/", f"{ORIGIN}/")
    assert not soft("http://SITE.test", f"{ORIGIN}/")
    # A page that moved elsewhere, or answered in place.
    assert not soft(f"{ORIGIN}/old", f"{ORIGIN}/new")
    assert not soft(f"{ORIGIN}/page", f"{ORIGIN}/page")
    to_404 = learn(frozenset(), None, final_url=f"{ORIGIN}/404.html")
    assert judge(to_404, none, f"{ORIGIN}/gone", f"{ORIGIN}/404.html", THRESHOLD, True)
    assert not judge(to_404, none, f"{ORIGIN}/404.html", f"{ORIGIN}/404.html", THRESHOLD, True)
    in_place = learn(frozenset({"sorry", "gone"}), frozenset(), final_url="")
    assert not judge(in_place, none, f"{ORIGIN}/missing", f"{ORIGIN}/", THRESHOLD, True)


def test_probe_urls_are_random_paths_of_the_origin() -> None:
    first, second = probe_url("HTTP://Site.test:8080/a/b?c=1"), probe_url("http://site.test:8080/")
    pattern = rf"http://site\.test:8080/[0-9a-f]{{16}}{PROBE_SUFFIX}"
    assert re.fullmatch(pattern, first) and re.fullmatch(pattern, second)
    assert first != second
    assert origin_of(first) == "http://site.test:8080"


# ---- origin states in Redis ---------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def soft_state() -> OriginState:
    print_ = NotFoundPrint(f"{ORIGIN}/", frozenset({"sorry", "gone"}), frozenset({"menu"}))
    return OriginState(SOFT, print=print_)


def test_states_round_trip_through_their_json() -> None:
    by_bytes = OriginState(SOFT, print=NotFoundPrint("", frozenset(), frozenset({"a"}), "ab" * 32))
    states = (OriginState(CLAIMED, frozenset({"a", "b"})), OriginState(HONEST), soft_state())
    phrases = ("0a1b2c3d", "ffee0011")
    claim = OriginState(CLAIMED, frozenset({"a"}), reference_phrases=phrases)
    waiting = NotFoundPrint("", frozenset({"x"}), frozenset(), pending=phrases)
    templated = NotFoundPrint("", frozenset({"x"}), frozenset(), template=phrases[::-1])
    more = (claim, OriginState(SOFT, print=waiting), OriginState(SOFT, print=templated))
    for state in (*states, by_bytes, *more):
        assert OriginState.decode(state.encode()) == state
    with pytest.raises(ValueError, match="not a soft-404 state"):
        OriginState.decode('{"k":"soft","own":[]}')
    with pytest.raises(ValueError, match="not a soft-404 state"):
        OriginState.decode("[1]")


def test_one_claim_per_origin_across_workers(redis_client: redis.Redis) -> None:
    key = "crawlproj:{t}:soft404"
    workers = [OriginStates(redis_client, key) for _ in range(3)]
    assert [w.get(ORIGIN) for w in workers] == [None, None, None]
    wins = [w.claim(ORIGIN, frozenset({"menu", "home"})) for w in workers]
    assert wins == [True, False, False]
    # The claim keeps the first worker's reference, whoever reads it.
    assert workers[2].read(ORIGIN) == OriginState(CLAIMED, frozenset({"menu", "home"}))
    assert workers[1].claim("http://other.test", frozenset()) is True


def test_a_settled_state_reaches_other_workers_once_their_claim_copy_expires(
    redis_client: redis.Redis,
) -> None:
    key, clock = "crawlproj:{t}:soft404", Clock()
    prober, other = OriginStates(redis_client, key, clock), OriginStates(redis_client, key, clock)
    prober.claim(ORIGIN, frozenset({"menu"}))
    assert other.get(ORIGIN) == OriginState(CLAIMED, frozenset({"menu"}))
    prober.settle(ORIGIN, soft_state())
    assert prober.get(ORIGIN) == soft_state()
    # The other worker read "claimed" just now: it asks Redis again only later.
    assert other.get(ORIGIN) == OriginState(CLAIMED)
    clock.now += CLAIM_RECHECK_S
    assert other.get(ORIGIN) == soft_state()
    # Settled states are kept: no more Redis reads for this origin.
    redis_client.delete(key)
    assert other.get(ORIGIN) == soft_state() and prober.get(ORIGIN) == soft_state()
    assert other.read(ORIGIN) is None


def test_a_new_probe_answer_replaces_the_last(redis_client: redis.Redis) -> None:
    states = OriginStates(redis_client, "crawlproj:{t}:soft404")
    states.claim(ORIGIN, frozenset())
    states.settle(ORIGIN, soft_state())
    states.settle(ORIGIN, OriginState(HONEST))
    assert states.get(ORIGIN) == OriginState(HONEST) == states.read(ORIGIN)


def test_claims_never_settled_do_not_pile_up(redis_client: redis.Redis, monkeypatch) -> None:
    # A probe dropped or lost leaves its origin claimed for good: its local copy must not
    # stay for the whole crawl (a broad crawl claims millions of origins).
    monkeypatch.setattr(soft404_states, "CACHE_ORIGINS", 50)
    key, clock = "crawlproj:{t}:soft404", Clock()
    states = OriginStates(redis_client, key, clock)
    for i in range(200):
        states.claim(f"http://h{i}.test", frozenset())
    assert len(states._claimed) == 50  # the newest live claims
    assert states.get("http://h199.test") == OriginState(CLAIMED)
    clock.now += CLAIM_RECHECK_S
    states.claim("http://late.test", frozenset())
    assert list(states._claimed) == ["http://late.test"]  # the stale ones went first
    # An evicted origin is still known as claimed: it is read from Redis again.
    assert states.get("http://h0.test") == OriginState(CLAIMED)
    redis_client.delete(key)
