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
    assert (found is None) if problem is None else (problem in found)
