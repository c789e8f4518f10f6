"""The furniture filter before main-content extraction (extensions/content/main_text.py):
what it removes, and the document sections it must leave, shaped as real generators
write them (Sphinx, DocBook, Markdown headings) beside the blog furniture it is for."""

from __future__ import annotations

import pytest

from extensions.content.main_text import strip_furniture
from extensions.content.visible_text import to_utf8

TEXT = "<p>Every instance of this object represents one calendar day in the proleptic.</p>"


def _kept(body: str) -> str:
    stripped = strip_furniture(to_utf8(f"<html><body>{body}</body></html>"))
    assert stripped is not None
    return stripped.decode()


@pytest.mark.parametrize(
    "section",
    [
        # Sphinx (docutils) and DocBook (PostgreSQL) sections named from their titles.
        '<section id="date-objects"><h2>date Objects</h2>{text}</section>',
        '<section id="comments"><h2>Comments</h2>{text}</section>',
        '<div class="section" id="timestamp"><h3>Timestamp</h3>{text}</div>',
        '<div class="sect2" id="ECPG-PGTYPES-DATE"><div class="titlepage"><h3>The date Type'
        "</h3></div>{text}</div>",
        '<div class="refentry" id="SQL-COMMENT"><h2>COMMENT</h2>{text}</div>',
        '<article id="related-work">{text}</article>',
        # A Markdown generator's heading anchor, the text after it.
        '<h3 id="related-reading">Related reading</h3>{text}',
    ],
)
def test_a_section_named_like_furniture_stays(section: str) -> None:
    assert "proleptic" in _kept(section.format(text=TEXT))


@pytest.mark.parametrize(
    "furniture",
    [
        # A blog's comment list by id (an older theme), by class on a section, its
        # byline by a stem, an ad box and a landmark: all removed, the article kept.
        "<div id='comments'><h3>12 comments</h3><ul><li>proleptic? first!</li></ul></div>",
        '<section id="comments" class="comments-area"><h2>2 thoughts</h2>'
        "<p>proleptic indeed</p></section>",
        '<div class="entry-meta">Posted 3 May 2024, proleptic</div>',
        '<div id="footer">proleptic footer</div>',
        '<aside class="ad-slot">proleptic ads</aside>',
        '<div role="navigation">proleptic</div>',
        "<p><time>3 May 2024 proleptic</time></p>",
    ],
)
def test_furniture_goes_and_the_article_stays(furniture: str) -> None:
    kept = _kept(f"<article><h1>Days</h1><p>One calendar day at a time.</p></article>{furniture}")
    assert "proleptic" not in kept
    assert "One calendar day" in kept
