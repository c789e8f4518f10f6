"""robots.txt rules (RFC 9309): matching, Crawl-delay, sitemap lines, the ROBOTS_* policy."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from protego import Protego

from extensions.robots.rules import (
    RobotsPolicy,
    allowed,
    crawl_delay,
    parse_sitemaps,
    product_token,
)
from tests.project_settings import project_settings

# (name, user agent, path on http://foo.bar, expected, robots.txt)
Case = tuple[str, str, str, bool, str]

RFC_CASES: list[Case] = [
    # RFC 9309 2.2.2: the most specific (longest) match wins ...
    ("longest-allow", "x", "/a/b/c", True, "User-agent: *\nDisallow: /a\nAllow: /a/b\n"),
    ("longest-disallow", "x", "/a/bc", False, "User-agent: *\nAllow: /a\nDisallow: /a/b\n"),
    ("shorter-only", "x", "/a/c", True, "User-agent: *\nAllow: /a\nDisallow: /a/b\n"),
    # ... and Allow wins a tie, whatever the order of the lines.
    ("tie-allow-first", "x", "/p", True, "User-agent: *\nAllow: /p\nDisallow: /p\n"),
    ("tie-disallow-first", "x", "/p", True, "User-agent: *\nDisallow: /p\nAllow: /p\n"),
    ("tie-wildcards", "x", "/a.x", True, "User-agent: *\nDisallow: /*.x\nAllow: /*.x\n"),
    # 2.2.3: "*" matches any sequence, "$" anchors the end.
    ("star-middle", "x", "/a/b/b/c", False, "User-agent: *\nDisallow: /a/*/c\n"),
    ("star-query", "x", "/page?q=1", False, "User-agent: *\nDisallow: /*?\n"),
    ("star-no-query", "x", "/page", True, "User-agent: *\nDisallow: /*?\n"),
    ("dollar-exact", "x", "/a/b.php", False, "User-agent: *\nDisallow: /*.php$\n"),
    ("dollar-longer", "x", "/a/b.php?x", True, "User-agent: *\nDisallow: /*.php$\n"),
    ("dollar-dir", "x", "/a/", False, "User-agent: *\nDisallow: /a/$\n"),
    ("dollar-dir-child", "x", "/a/b", True, "User-agent: *\nDisallow: /a/$\n"),
    # Protego 0.7.0 fix-up: a final "$" anchors, it does not also match a literal "$".
    ("dollar-not-literal", "x", "/a$b", True, "User-agent: *\nDisallow: /a$\n"),
    ("dollar-not-literal-pct", "x", "/a%24b", True, "User-agent: *\nDisallow: /a$\n"),
    ("dollar-mid-literal", "x", "/a$b/c", False, "User-agent: *\nDisallow: /a$b\n"),
    ("dollar-mid-pct", "x", "/a%24b", False, "User-agent: *\nDisallow: /a$b\n"),
    ("dollar-mid-other", "x", "/ab", True, "User-agent: *\nDisallow: /a$b\n"),
    ("dollar-pct-rule", "x", "/a$b", False, "User-agent: *\nDisallow: /a%24b\n"),
    ("dollar-pct-rule-pct", "x", "/a%24b", False, "User-agent: *\nDisallow: /a%24b\n"),
    ("dollar-pct-rule-end", "x", "/a$", False, "User-agent: *\nDisallow: /a%24$\n"),
    ("dollar-pct-rule-end-no", "x", "/a$b", True, "User-agent: *\nDisallow: /a%24$\n"),
    # 2.2.2: an empty Disallow allows everything.
    ("empty-disallow", "x", "/any", True, "User-agent: *\nDisallow:\n"),
    ("empty-file", "x", "/any", True, ""),
    # 2.2.1: product tokens compare case-insensitively and exactly; "*" is the fallback.
    ("ua-case", "crawlproj", "/a", False, "User-agent: CrawlProj\nDisallow: /\n"),
    ("ua-case-query", "CRAWLPROJ", "/a", False, "User-agent: crawlproj\nDisallow: /\n"),
    ("ua-full-string", "crawlproj/0.1 (+u)", "/a", False, "User-agent: crawlproj\nDisallow: /\n"),
    ("ua-line-version", "crawlproj", "/a", False, "User-agent: crawlproj/1.0\nDisallow: /\n"),
    ("ua-line-words", "crawlproj", "/a", False, "User-agent: crawlproj bot\nDisallow: /\n"),
    ("ua-not-prefix", "crawlproj", "/a", True, "User-agent: crawl\nDisallow: /\n"),
    ("ua-not-glob", "crawlproj", "/a", True, "User-agent: crawl*\nDisallow: /\n"),
    ("ua-not-longer", "crawlproj", "/a", True, "User-agent: crawlprojx\nDisallow: /\n"),
    ("ua-star-fallback", "crawlproj", "/a", False,
     "User-agent: other\nAllow: /\nUser-agent: *\nDisallow: /\n"),
    ("ua-specific-over-star", "crawlproj", "/a", True,
     "User-agent: *\nDisallow: /\nUser-agent: crawlproj\nAllow: /\n"),
    ("ua-no-group", "crawlproj", "/a", True, "User-agent: other\nDisallow: /\n"),
    # 2.2.1: several groups for one agent are merged ...
    ("merge-groups", "a", "/y", False,
     "User-agent: a\nDisallow: /x\n\nUser-agent: A\nDisallow: /y\n"),
    ("merge-star-groups", "a", "/y", False,
     "User-agent: *\nDisallow: /x\nUser-agent: b\nAllow: /\nUser-agent: *\nDisallow: /y\n"),
    ("merge-longest", "a", "/x/y", True,
     "User-agent: a\nDisallow: /x\nUser-agent: a\nAllow: /x/y\n"),
    ("multi-agent-group", "b", "/p", False, "User-agent: a\nUser-agent: b\nDisallow: /\n"),
    # ... and other records (2.2.4), blank lines and comments do not split a group.
    ("crawl-delay-in-agents", "a", "/p", False,
     "User-agent: a\nCrawl-delay: 5\nUser-agent: b\nDisallow: /\n"),
    ("unknown-in-agents", "a", "/p", False,
     "User-agent: a\nFoo: bar\nUser-agent: b\nDisallow: /\n"),
    ("blank-in-group", "a", "/p", False, "User-agent: a\n\nDisallow: /p\n"),
    ("rule-outside-group", "a", "/p", True, "Disallow: /\nUser-agent: a\nAllow: /x\n"),
    ("comment", "x", "/q", True, "User-agent: *  # all\nDisallow: /p # not /q\n"),
    ("bom", "x", "/p", False, "\ufeffUser-agent: *\nDisallow: /\n"),
    ("cr-line-ends", "x", "/p", False, "User-agent: *\rDisallow: /p\r"),
    # Paths are case-sensitive (2.2.2).
    ("path-case", "x", "/p", True, "User-agent: *\nDisallow: /P\n"),
    # 2.2.2: percent-encoded and raw octets are equivalent; non-ASCII is UTF-8 encoded.
    ("pct-unreserved-rule", "x", "/~a", False, "User-agent: *\nDisallow: /%7Ea\n"),
    ("pct-unreserved-url", "x", "/%7ea", False, "User-agent: *\nDisallow: /~a\n"),
    ("pct-utf8-rule-raw", "x", "/%C3%A4", False, "User-agent: *\nDisallow: /ä\n"),
    ("pct-utf8-url-raw", "x", "/ä", False, "User-agent: *\nDisallow: /%c3%a4\n"),
    ("pct-reserved-space", "x", "/a%20b", False, "User-agent: *\nDisallow: /a b\n"),
    # 2.2.2: /robots.txt itself is always allowed.
    ("robots-txt", "x", "/robots.txt", True, "User-agent: *\nDisallow: /\n"),
    ("robots-txt-not-sub", "x", "/a/robots.txt", False, "User-agent: *\nDisallow: /\n"),
    # HTML served as robots.txt holds no rules.
    ("html", "x", "/p", True, "<html><body><p>Not found</p></body></html>"),
    # Lenient spellings, as in Google's parser.
    ("misspelled", "x", "/p", False, "User-agent: *\nDissallow: /p\n"),
]  # fmt: skip

# Google's robots.txt test suite (google/robotstxt, robots_test.cc), re-typed from memory.
# Where Google departs from RFC 9309 on purpose ("GoogleOnly") or the RFC decides
# otherwise, the RFC answer is used and the case name says so.
G_GROUPS = (
    "allow: /foo/bar/\n\nuser-agent: FooBot\ndisallow: /\nallow: /x/\nuser-agent: BarBot\n"
    "disallow: /\nallow: /y/\n\n\nallow: /w/\nuser-agent: BazBot\n\nuser-agent: FooBot\n"
    "allow: /z/\ndisallow: /\n"
)
G_GLOBAL = "user-agent: *\nallow: /\nuser-agent: FooBot\ndisallow: /\n"
G_SPECIFIC = (
    "user-agent: FooBot\nallow: /\nuser-agent: BarBot\ndisallow: /\n"
    "user-agent: BazBot\ndisallow: /\n"
)
G_SPECIAL_1 = "User-agent: FooBot\nDisallow: /foo/bar/quz\nAllow: /foo/*/qux\n"
G_SPECIAL_2 = "User-agent: FooBot\nDisallow: /foo/bar$\nAllow: /foo/bar/qux\n"
G_SPECIAL_3 = "User-agent: FooBot\n# Disallow: /\nDisallow: /foo/quz#qux\nAllow: /\n"
G_UPPER = "User-Agent: FOO BAR\nAllow: /x/\nDisallow: /\n"
G_LOWER = "User-Agent: foo bar\nAllow: /x/\nDisallow: /\n"
G_MIXED = "User-Agent: FoO bAr\nAllow: /x/\nDisallow: /\n"

GOOGLE_CASES: list[Case] = [
    ("ID_LineSyntax_Line.correct", "FooBot", "/x/y", False, "user-agent: FooBot\ndisallow: /\n"),
    ("ID_LineSyntax_Line.incorrect", "FooBot", "/x/y", True, "foo: FooBot\nbar: /\n"),
    ("ID_LineSyntax_Line.no_colon", "FooBot", "/x/y", False, "user-agent FooBot\ndisallow /\n"),
    ("ID_LineSyntax_Groups.x", "FooBot", "/x/b", True, G_GROUPS),
    ("ID_LineSyntax_Groups.z", "FooBot", "/z/d", True, G_GROUPS),
    ("ID_LineSyntax_Groups.y", "FooBot", "/y/c", False, G_GROUPS),
    ("ID_LineSyntax_Groups.bar_y", "BarBot", "/y/c", True, G_GROUPS),
    ("ID_LineSyntax_Groups.bar_w", "BarBot", "/w/a", True, G_GROUPS),
    ("ID_LineSyntax_Groups.bar_z", "BarBot", "/z/d", False, G_GROUPS),
    ("ID_LineSyntax_Groups.baz_z", "BazBot", "/z/d", True, G_GROUPS),
    ("ID_LineSyntax_Groups.outside", "FooBot", "/foo/bar/", False, G_GROUPS),
    ("ID_LineSyntax_GroupsOtherRules.sitemap", "BarBot", "/", False,
     "User-agent: BarBot\nSitemap: https://foo.bar/sitemap\nUser-agent: *\nDisallow: /\n"),
    ("ID_LineSyntax_GroupsOtherRules.unknown", "FooBot", "/", False,
     "User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n"),
    ("ID_GlobalGroups_Secondary.empty", "FooBot", "/x/y", True, ""),
    ("ID_GlobalGroups_Secondary.global_foo", "FooBot", "/x/y", False, G_GLOBAL),
    ("ID_GlobalGroups_Secondary.global_bar", "BarBot", "/x/y", True, G_GLOBAL),
    ("ID_GlobalGroups_Secondary.only_specific", "QuxBot", "/x/y", True, G_SPECIFIC),
    ("ID_AllowDisallow_Value_CaseSensitive.lower", "FooBot", "/x/y", False,
     "user-agent: FooBot\ndisallow: /x/\n"),
    ("ID_AllowDisallow_Value_CaseSensitive.upper", "FooBot", "/x/y", True,
     "user-agent: FooBot\ndisallow: /X/\n"),
    ("ID_UserAgentValueCaseInsensitive.upper", "Foo", "/x/y", True, G_UPPER),
    ("ID_UserAgentValueCaseInsensitive.upper_no", "Foo", "/a/b", False, G_UPPER),
    ("ID_UserAgentValueCaseInsensitive.lower", "foo", "/a/b", False, G_LOWER),
    ("ID_UserAgentValueCaseInsensitive.mixed", "FOO", "/x/y", True, G_MIXED),
    ("GoogleOnly_AcceptUserAgentUpToFirstSpace", "Foo", "/x/y", True,
     "User-Agent: *\nDisallow: /\nUser-Agent: Foo Bar\nAllow: /x/\nDisallow: /\n"),
    ("ID_LongestMatch.same_disallow_first", "FooBot", "/x/page.html", True,
     "user-agent: FooBot\ndisallow: /x/page.html\nallow: /x/page.html\n"),
    ("ID_LongestMatch.same_allow_first", "FooBot", "/x/page.html", True,
     "user-agent: FooBot\nallow: /x/page.html\ndisallow: /x/page.html\n"),
    ("ID_LongestMatch.longer_disallow", "FooBot", "/page.html", False,
     "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n"),
    ("ID_LongestMatch.longer_allow", "FooBot", "/page", True,
     "user-agent: FooBot\nallow: /page\ndisallow: /*.html\n"),
    ("ID_LongestMatch.allow_prefix", "FooBot", "/x/page.html", True,
     "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n"),
    ("ID_LongestMatch.wildcard_wins", "FooBot", "/x/y.html", False,
     "user-agent: FooBot\nallow: /x/page.\ndisallow: /*.html\n"),
    ("ID_LongestMatch.root_tie", "FooBot", "/x/page.html", True,
     "user-agent: FooBot\ndisallow: /\nallow: /\n"),
    ("ID_LongestMatch.dir_x", "FooBot", "/x", False,
     "user-agent: FooBot\ndisallow: /x\nallow: /x/\n"),
    ("ID_LongestMatch.dir_x_slash", "FooBot", "/x/", True,
     "user-agent: FooBot\ndisallow: /x\nallow: /x/\n"),
    ("ID_LongestMatch.specific_group_x", "FooBot", "/x/page", True,
     "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n"),
    ("ID_LongestMatch.specific_group_y", "FooBot", "/y/page", False,
     "User-agent: *\nDisallow: /x/\nUser-agent: FooBot\nDisallow: /y/\n"),
    ("ID_Encoding.query_unencoded", "FooBot", "/foo/bar?qux=taz&baz=http://foo.bar?tar&par",
     True,
     "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar?qux=taz&baz=http://foo.bar?tar&par\n"),
    ("ID_Encoding.utf8_rule", "FooBot", "/foo/bar/%E3%83%84", True,
     "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n"),
    # Google: False (it leaves the URL as given); RFC 9309 2.2.2 encodes the URL's octets too.
    ("ID_Encoding.utf8_url_raw(RFC)", "FooBot", "/foo/bar/ツ", True,
     "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/ツ\n"),
    ("ID_Encoding.pct_rule", "FooBot", "/foo/bar/%E3%83%84", True,
     "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%E3%83%84\n"),
    ("ID_Encoding.pct_unreserved", "FooBot", "/foo/bar/%62%61%7A", True,
     "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n"),
    # Google: False; RFC 9309 2.2.2's table maps /foo/bar/%62%61%7A to /foo/bar/baz.
    ("ID_Encoding.pct_unreserved_plain(RFC)", "FooBot", "/foo/bar/baz", True,
     "User-agent: FooBot\nDisallow: /\nAllow: /foo/bar/%62%61%7A\n"),
    ("ID_SpecialCharacters.star_quz", "FooBot", "/foo/bar/quz", False, G_SPECIAL_1),
    ("ID_SpecialCharacters.star_empty", "FooBot", "/foo/quz", True, G_SPECIAL_1),
    ("ID_SpecialCharacters.star_double_slash", "FooBot", "/foo//quz", True, G_SPECIAL_1),
    ("ID_SpecialCharacters.star_bax", "FooBot", "/foo/bax/quz", True, G_SPECIAL_1),
    ("ID_SpecialCharacters.dollar", "FooBot", "/foo/bar", False, G_SPECIAL_2),
    ("ID_SpecialCharacters.dollar_qux", "FooBot", "/foo/bar/qux", True, G_SPECIAL_2),
    ("ID_SpecialCharacters.dollar_slash", "FooBot", "/foo/bar/", True, G_SPECIAL_2),
    ("ID_SpecialCharacters.dollar_baz", "FooBot", "/foo/bar/baz", True, G_SPECIAL_2),
    ("ID_SpecialCharacters.hash_bar", "FooBot", "/foo/bar", True, G_SPECIAL_3),
    ("ID_SpecialCharacters.hash_quz", "FooBot", "/foo/quz", False, G_SPECIAL_3),
    ("GoogleOnly_IndexHTMLisDirectory", "foobot", "/allowed-slash/", True,
     "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n"),
    ("GoogleOnly_IndexHTMLisDirectory.other", "foobot", "/allowed-slash/index.htm", False,
     "User-Agent: *\nAllow: /allowed-slash/index.html\nDisallow: /\n"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("user_agent", "path", "expected", "robots_txt"),
    [pytest.param(*case[1:], id=case[0]) for case in RFC_CASES + GOOGLE_CASES],
)
def test_allowed(user_agent: str, path: str, expected: bool, robots_txt: str) -> None:
    url = "http://foo.bar" + path
    assert allowed(robots_txt, user_agent, url) is expected
    assert allowed(robots_txt.encode(), user_agent, url) is expected


@pytest.mark.parametrize(
    ("robots_txt", "user_agent", "url", "rfc"),
    [
        ("User-agent: FooBot\nCrawl-delay: 1\nUser-agent: *\nDisallow: /\n", "FooBot", "/", False),
        ("User-agent: crawl\nDisallow: /\n", "crawlproj", "/", True),
        ("User-agent: crawlproj/1.0\nDisallow: /\n", "crawlproj", "/", False),
        ("User-agent: *\nDisallow: /a$\n", "x", "/a$b", True),
        ("\ufeffUser-agent: *\nDisallow: /\n", "x", "/", False),
    ],
    ids=["other-record-splits-group", "ua-prefix", "ua-version", "dollar-twin", "bom"],
)
def test_protego_departures_from_rfc_are_fixed(
    robots_txt: str, user_agent: str, url: str, rfc: bool
) -> None:
    # If Protego ever agrees with the RFC here, the matching fix-up can go.
    assert Protego.parse(robots_txt).can_fetch("http://h" + url, user_agent) is not rfc
    assert allowed(robots_txt, user_agent, "http://h" + url) is rfc


def _reference(rules: list[tuple[str, str]], path: str) -> bool:
    """RFC 9309 2.2.2/2.2.3 by regex: longest pattern wins, Allow on ties, only a final "$"
    anchors; lengths count a literal "$" as its escape "%24", as matching does."""
    best: tuple[int, bool] | None = None
    for kind, pattern in rules:
        anchored = pattern.endswith("$")
        body = (pattern[:-1] if anchored else pattern).replace("$", "%24")
        regex = "".join(".*" if c == "*" else re.escape(c) for c in body)
        if re.match(regex + (r"\Z" if anchored else ""), path.replace("$", "%24"), re.S):
            candidate = (len(body) + anchored, kind == "allow")
            best = candidate if best is None else max(best, candidate)
    return True if best is None else best[1]


_PATTERNS = st.builds(
    str.__add__, st.sampled_from(["/", "*", "/a", "/*"]), st.text("ab/*$", max_size=6)
)


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["allow", "disallow"]), _PATTERNS), min_size=1, max_size=5),
    st.text("ab/$", max_size=8),
)
def test_matching_agrees_with_a_regex_reference(rules: list[tuple[str, str]], tail: str) -> None:
    robots_txt = "User-agent: *\n" + "".join(f"{kind}: {pattern}\n" for kind, pattern in rules)
    path = "/" + tail
    assert allowed(robots_txt, "x", "http://h" + path) is _reference(rules, path)


@given(st.text(max_size=300), st.sampled_from(["/", "/a", "/a$b", "/%24", "/ä?x=1"]))
def test_allowed_never_raises(robots_txt: str, path: str) -> None:
    assert isinstance(allowed(robots_txt, "crawlproj", "http://h" + path), bool)


def test_product_token() -> None:
    assert product_token("crawlproj/0.1 (+https://x)") == "crawlproj"
    assert product_token("  CrawlProj ") == "crawlproj"
    assert product_token("/weird") == ""


# --- Crawl-delay and Sitemap ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("robots_txt", "expected"),
    [
        ("User-agent: crawlproj\nCrawl-delay: 2.5\n", 2.5),
        ("User-agent: *\nCrawl-delay: 4\n", 4.0),
        ("User-agent: other\nCrawl-delay: 9\nDisallow: /\nUser-agent: *\nCrawl-delay: 3\n", 3.0),
        ("User-agent: crawlproj\nCrawl-delay: 1\nDisallow:\nUser-agent: *\nCrawl-delay: 3\n", 1.0),
        # No Allow/Disallow line closes the first group: RFC 9309 2.2.4 makes it one group.
        ("User-agent: crawlproj\nCrawl-delay: 1\nUser-agent: *\nCrawl-delay: 3\n", 3.0),
        ("User-agent: crawlproj\nCrawl-delay: 1\nDisallow:\n"
         "User-agent: crawlproj\nCrawl-delay: 7\n", 7.0),
        ("User-agent: crawlproj\nCrawl-delay: soon\n", None),
        ("User-agent: crawlproj\nCrawl-delay: -1\n", None),
        ("User-agent: crawlproj\nCrawl-delay: nan\n", None),
        ("User-agent: crawlproj\nDisallow: /x\n", None),
        ("Crawl-delay: 5\n", None),
    ],
    ids=["own", "star", "other-ignored", "own-over-star", "one-group", "merged-max", "words",
         "negative", "nan", "absent", "outside-group"],
)  # fmt: skip
def test_crawl_delay(robots_txt: str, expected: float | None) -> None:
    assert crawl_delay(robots_txt, "crawlproj") == expected


def test_sitemaps_are_site_wide_absolute_and_deduplicated() -> None:
    text = (
        "Sitemap: https://h/s1.xml\nUser-agent: a\nSitemap: http://h/s2.xml.gz\nDisallow: /\n"
        "sitemap: https://h/s1.xml\nSitemap: /relative.xml\nSitemap: ftp://h/s.xml\nSitemap:\n"
    )
    assert parse_sitemaps(text) == ("https://h/s1.xml", "http://h/s2.xml.gz")


# --- policy settings (every bad value: tests/unit/test_config.py) ---------------------------


def test_policy_from_settings() -> None:
    values = {"ROBOTS_USER_AGENT": "MyBot", "ROBOTS_CACHE_TTL": "3600", "ROBOTS_MAX_BYTES": 600000}
    policy = RobotsPolicy.from_settings(project_settings(values))
    assert (policy.user_agent_token, policy.cache_ttl, policy.max_bytes) == ("MyBot", 3600, 600000)
    assert RobotsPolicy.from_settings(project_settings()) == RobotsPolicy()
