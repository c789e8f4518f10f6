"""Seeds: files with comments and bad lines, comma-separated URLs, clear errors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from crawlproj.seeds import SeedError, read_seed_arg, seed_problem


def test_file_with_comments_blank_lines_and_inline_comments(tmp_path: Path) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text("# header\n\nhttp://a.test/\n  https://b.test/x#frag   # note\n")
    seeds = read_seed_arg(str(path))
    assert [(s.url, s.line_no) for s in seeds] == [
        ("http://a.test/", 3),
        ("https://b.test/x#frag", 4),
    ]


def test_bad_lines_are_logged_with_line_numbers(tmp_path: Path, caplog) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text("http://ok.test/\nftp://x.test/\nhttp://bad port.test:99999/\n")
    with caplog.at_level(logging.ERROR):
        seeds = read_seed_arg(str(path))
    assert [s.url for s in seeds] == ["http://ok.test/"]
    assert f"{path}:2" in caplog.text and f"{path}:3" in caplog.text


def test_a_file_line_that_is_a_host_without_a_scheme_is_crawled_as_http(
    tmp_path: Path, caplog
) -> None:
    path = tmp_path / "seeds.txt"
    lines = ["example.org", "docs.example.org:8080/en/?a=1", "localhost/x", "b.test/y"]
    path.write_text("\n".join([*lines, "not a host", "mailto:x@a.test", "/path", "a..b"]))
    with caplog.at_level(logging.WARNING):
        seeds = read_seed_arg(str(path))
    assert [(s.url, s.line_no) for s in seeds] == [
        ("http://" + line, n) for n, line in enumerate(lines, start=1)
    ]
    assert f"{path}:1 has no scheme: taken as http://example.org" in caplog.text
    assert all(f"{path}:{n}" in caplog.text for n in (5, 6, 7, 8))  # skipped, with a reason
    with pytest.raises(SeedError, match="does not exist"):
        read_seed_arg("example.org")  # on the command line a name is a file name


def test_comma_separated_urls() -> None:
    seeds = read_seed_arg("http://a.test/, http://b.test/")
    assert [s.url for s in seeds] == ["http://a.test/", "http://b.test/"]


@pytest.mark.parametrize(
    ("arg", "message"),
    [(None, "no seeds"), ("missing.txt", "does not exist"), ("http://", "no valid seed")],
)
def test_unusable_arguments(arg: str | None, message: str) -> None:
    with pytest.raises(SeedError, match=message):
        read_seed_arg(arg)


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("http://a.test/", None),
        ("mailto:x@a.test", "only http"),
        ("http:///path", "no host"),
        ("http://a.test:notaport/", "not a URL"),
    ],
)
def test_seed_problem(url: str, problem: str | None) -> None:
    found = seed_problem(url)
    assert (found is None) if problem is None else (problem in (found or ""))


LONG_URL = "http://a.test/" + "x" * 5000


def test_a_long_url_argument_is_a_url_not_a_file_name() -> None:
    # Path(arg).is_file() raises OSError "File name too long" for this argument.
    seeds = read_seed_arg(f"http://ok.test/,{LONG_URL}")
    assert [s.url for s in seeds] == ["http://ok.test/", LONG_URL]


def test_a_long_argument_that_is_no_url_is_a_seed_error() -> None:
    with pytest.raises(SeedError, match="cannot be read: File name too long"):
        read_seed_arg("x" * 5000)


def test_seeds_longer_than_url_max_length_are_logged_and_skipped(tmp_path: Path, caplog) -> None:
    path = tmp_path / "seeds.txt"
    path.write_text(f"http://ok.test/\n{LONG_URL}\nhttp://ok.test/{'y' * 985}\n")
    with caplog.at_level(logging.ERROR):
        seeds = read_seed_arg(str(path), max_length=1000)
    assert [s.line_no for s in seeds] == [1, 3]  # line 3 is exactly 1000 characters
    assert f"{path}:2 " in caplog.text and "longer than URL_MAX_LENGTH=1000" in caplog.text
    assert "x" * 300 not in caplog.text  # the logged URL is cut
    assert len(read_seed_arg(str(path), max_length=0)) == 3  # URL_MAX_LENGTH=0: no limit


def test_all_seeds_too_long_is_a_seed_error(caplog) -> None:
    with caplog.at_level(logging.ERROR), pytest.raises(SeedError, match="no valid seed"):
        read_seed_arg(LONG_URL, max_length=1000)
    assert "Skipping seed -a seeds 'http://a.test/xx" in caplog.text


def test_a_non_utf8_line_is_reported_and_the_rest_kept(tmp_path: Path, caplog) -> None:
    path = tmp_path / "seeds.txt"
    path.write_bytes(
        b"\xef\xbb\xbfhttp://a.test/\n"  # a byte order mark (Notepad) is not part of line 1
        b"http://b.test/caf\xe9\n"
        b"# comm\xe9nt\n"
        b"http://c.test/  # caf\xe9\r\n"
        b"http://d.test/\n"
    )
    with caplog.at_level(logging.ERROR):
        seeds = read_seed_arg(str(path))
    assert [(s.url, s.line_no) for s in seeds] == [
        ("http://a.test/", 1),
        ("http://c.test/", 4),
        ("http://d.test/", 5),
    ]
    assert len(caplog.records) == 1
    assert f"{path}:2 'http://b.test/caf\\udce9': not UTF-8" in caplog.text


@pytest.mark.parametrize(
    ("arg", "problem"),
    [
        ("http://a.test/caf\udce9", "not UTF-8"),  # undecodable bytes in the command line
        ("http://a\x01b.test/", "contains control characters"),
        ("http://a.test/\x7f", "contains control characters"),
        ("http://[::1/", "not a URL"),
    ],
)
def test_command_line_seeds_that_scrapy_request_refuses(arg: str, problem: str, caplog) -> None:
    with caplog.at_level(logging.ERROR):
        seeds = read_seed_arg(f"http://ok.test/,{arg}")
    assert [s.url for s in seeds] == ["http://ok.test/"]
    assert f"Skipping seed -a seeds {arg!r}: {problem}" in caplog.text
