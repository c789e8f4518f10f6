"""Learned noise parameters (extensions/admission/noise.py)."""

from __future__ import annotations

from extensions.admission.noise import added_values, differing_values, learned, strip_params


def test_duplicates_name_the_parameters_they_differ_in_and_their_values() -> None:
    pairs = differing_values("http://f.test/page/3?visit=9", "http://f.test/page/3?visit=2")
    assert pairs == {"visit": frozenset({"9", "2"})}
    assert differing_values("http://f.test/p?ref=a&x=1", "http://f.test/p?x=1") == {
        "ref": frozenset({"a"})
    }
    # Another path or host says nothing about a parameter.
    assert differing_values("http://f.test/a?visit=1", "http://f.test/b?visit=2") == {}
    assert differing_values("http://f.test/a?v=1", "http://g.test/a?v=2") == {}
    assert differing_values("http://f.test/a?v=1", "http://f.test/a?v=1") == {}


def test_paging_and_sections_are_never_noise() -> None:
    """A listing's ?page=1 is a copy of the listing, a ?category=all of the shop: their
    other values are other pages."""
    for name in ("page", "pg", "start", "category", "lang", "Page"):
        assert differing_values(f"http://f.test/shop/?{name}=1", "http://f.test/shop/") == {}
    both = differing_values("http://f.test/shop/?page=1&ref=x", "http://f.test/shop/")
    assert both == {"ref": frozenset({"x"})}


def test_a_view_names_the_parameters_it_adds_to_its_page() -> None:
    """What a near duplicate may teach: parameters its original has none of."""
    page = "http://f.test/post/7"
    assert added_values(f"{page}?replytocom=12", page) == {"replytocom": "12"}
    assert added_values(f"{page}?a=1&print=1", f"{page}?a=1") == {"print": "1"}
    # A category beside another has its parameter in both: nothing added.
    assert added_values("http://f.test/s?c=shoes", "http://f.test/s?c=bags") == {}
    assert added_values(f"{page}?page=2&tag=x", page) == {}  # paging, sections
    assert added_values(f"{page}?v=1", "http://f.test/post/8") == {}
    assert added_values(f"{page}?v=1", "http://g.test/post/7") == {}


def test_learned_parameters_are_dropped_for_their_host_only() -> None:
    noise = learned(["f.test visit", "f.test ref", "broken"])
    assert noise == {"f.test": frozenset({"visit", "ref"})}
    assert (
        strip_params("http://f.test/page/3?a=1&visit=9&ref=x", noise) == "http://f.test/page/3?a=1"
    )
    assert strip_params("http://f.test/page/3?visit=9", noise) == "http://f.test/page/3"
    assert strip_params("http://g.test/page/3?visit=9", noise) == "http://g.test/page/3?visit=9"
    assert strip_params("http://f.test/page/3", noise) == "http://f.test/page/3"


def test_a_learned_value_drops_that_value_only() -> None:
    noise = learned(["f.test tab=overview", "f.test print=1"])
    assert noise == {"f.test": frozenset({"tab=overview", "print=1"})}
    assert strip_params("http://f.test/p?tab=overview&a=1", noise) == "http://f.test/p?a=1"
    assert strip_params("http://f.test/p?print=1", noise) == "http://f.test/p"
    assert strip_params("http://f.test/p?tab=reviews", noise) == "http://f.test/p?tab=reviews"
    assert strip_params("http://f.test/p?print=2", noise) == "http://f.test/p?print=2"
    # A flag without a value is learned as "name=" (added_values: value "").
    assert strip_params("http://f.test/p?a=1&printable", {"f.test": frozenset({"printable="})}) == (
        "http://f.test/p?a=1"
    )
    assert added_values("http://f.test/p?printable", "http://f.test/p") == {"printable": ""}
