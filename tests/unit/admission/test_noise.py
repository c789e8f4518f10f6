"""Learned noise parameters (extensions/admission/noise.py)."""

from __future__ import annotations

from extensions.admission.noise import differing_params, learned, strip_params


def test_duplicates_name_the_parameters_they_differ_in() -> None:
    assert differing_params("http://f.test/page/3?visit=9", "http://f.test/page/3?visit=2") == [
        "visit"
    ]
    assert differing_params("http://f.test/p?ref=a&x=1", "http://f.test/p?x=1") == ["ref"]
    # Another path or host says nothing about a parameter.
    assert differing_params("http://f.test/a?visit=1", "http://f.test/b?visit=2") == []
    assert differing_params("http://f.test/a?v=1", "http://g.test/a?v=2") == []
    assert differing_params("http://f.test/a?v=1", "http://f.test/a?v=1") == []


def test_learned_parameters_are_dropped_for_their_host_only() -> None:
    noise = learned(["f.test visit", "f.test ref", "broken"])
    assert noise == {"f.test": frozenset({"visit", "ref"})}
    assert (
        strip_params("http://f.test/page/3?a=1&visit=9&ref=x", noise) == "http://f.test/page/3?a=1"
    )
    assert strip_params("http://f.test/page/3?visit=9", noise) == "http://f.test/page/3"
    assert strip_params("http://g.test/page/3?visit=9", noise) == "http://g.test/page/3?visit=9"
    assert strip_params("http://f.test/page/3", noise) == "http://f.test/page/3"
