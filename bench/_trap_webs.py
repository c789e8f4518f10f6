"""The web a bench_traps.py run crawls: the named trap web, restyled as its options ask."""

from __future__ import annotations

import argparse
import dataclasses
import random
from collections.abc import Callable
from typing import Any

from scripts.testweb import HostSpec, WebSpec
from scripts.testweb.dealt import dealt
from scripts.testweb.spec import (
    ALTERNATE_STYLES,
    CALENDAR_NAMED,
    GENERATOR_STYLES,
    REDIRECT_TRAP_STYLES,
    SOFT404_NAMED,
)

GENERATOR_MIN_PAGES = 20  # --generators: hosts this big get them (a tarpit beside a site)
# traps: the acceptance web the thresholds were chosen on; holdout: its families dealt
# out again (other hosts, sizes, seed), to show a figure is not fitted to one web.
# dealt:SEED: a web dealt at random from the same families (scripts/testweb/dealt.py).
WEBS: dict[str, Callable[[], WebSpec]] = {"traps": WebSpec.traps, "holdout": WebSpec.traps_holdout}


def web_spec(name: str) -> WebSpec:
    """The named trap web: traps, holdout or dealt:SEED."""
    if name in WEBS:
        return WEBS[name]()
    kind, _, seed = name.partition(":")
    if kind == "dealt" and seed.isdigit():
        return dealt(int(seed))
    raise argparse.ArgumentTypeError(f"--web {name!r}: use one of {sorted(WEBS)} or dealt:SEED")


def _styles(text: str, allowed: tuple[str, ...]) -> list[str]:
    """A comma list of `allowed` names. Checked here, not by the hosts: a web with no
    host big enough for them would take any name."""
    styles = [g.strip() for g in text.split(",") if g.strip()]
    unknown = sorted(set(styles) - set(allowed))
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown {unknown}; choose from {','.join(allowed)}")
    return styles


def generator_styles(text: str) -> list[str]:
    """--generators: a comma list of GENERATOR_STYLES."""
    return _styles(text, GENERATOR_STYLES)


def redirect_trap_styles(text: str) -> list[str]:
    """--redirect-traps: a comma list of REDIRECT_TRAP_STYLES."""
    return _styles(text, REDIRECT_TRAP_STYLES)


def alternate_styles(text: str) -> list[str]:
    """--alternates: a comma list of ALTERNATE_STYLES."""
    return _styles(text, ALTERNATE_STYLES)


def deal_styles(args: argparse.Namespace) -> str:
    """--deal-styles: the restyling options dealt at random from the dealt web's seed (each
    family on a coin toss, its styles drawn), so a sweep over seeds meets combinations no
    one chose; returns them as the flags that repeat the run."""
    kind, _, seed = args.web.partition(":")
    if kind != "dealt":
        raise argparse.ArgumentTypeError("--deal-styles needs --web dealt:SEED")
    rng = random.Random(f"styles:{seed}")
    flags = []
    if rng.random() < 0.5:
        args.soft404_style = rng.choice(SOFT404_NAMED)
        flags.append(f"--soft404-style {args.soft404_style}")
    if rng.random() < 0.5:
        args.calendar_style = rng.choice(CALENDAR_NAMED)
        flags.append(f"--calendar-style {args.calendar_style}")
    if rng.random() < 0.4:
        args.canonical_links = True
        flags.append("--canonical-links")
    if rng.random() < 0.5:
        args.trap_prose = 80
        flags.append("--trap-prose 80")
    for option, styles in (
        ("generators", DEALT_GENERATOR_STYLES),
        ("redirect_traps", REDIRECT_TRAP_STYLES),
        ("alternates", ALTERNATE_STYLES),
    ):
        if rng.random() < 0.4:
            setattr(args, option, rng.sample(styles, rng.randint(1, 3)))
            flags.append(f"--{option.replace('_', '-')} {','.join(getattr(args, option))}")
    return " ".join(flags)


# The styles webs are dealt from: the eight the dealt webs' figures (bench/README.md) were
# measured with; "mixed", added since, is asked for by name (--generators mixed).
DEALT_GENERATOR_STYLES = GENERATOR_STYLES[:8]


def restyled(spec: WebSpec, args: argparse.Namespace) -> WebSpec:
    """The web with the variants asked for: --trap-prose, --canonical-links, the
    calendar and soft-404 hosts restyled, --alternates on every host and --generators on
    every host of GENERATOR_MIN_PAGES pages or more (ValueError names a style no host has)."""

    def host(h: HostSpec) -> HostSpec:
        changes: dict[str, Any] = {}
        if args.canonical_links:
            changes["canonical_links"] = True
        if args.calendar_style and h.calendars:
            changes["calendars"] = [args.calendar_style]
        if args.soft404_style and h.soft404:
            changes["soft404"] = args.soft404_style
        if args.generators and h.pages >= GENERATOR_MIN_PAGES:
            changes["generators"] = list(args.generators)
        if args.redirect_traps and h.pages >= GENERATOR_MIN_PAGES:
            changes["redirect_traps"] = list(args.redirect_traps)
        if args.alternates:
            changes["alternates"] = list(args.alternates)
        return dataclasses.replace(h, **changes) if changes else h

    hosts = [host(h) for h in spec.hosts]
    return dataclasses.replace(spec, trap_prose=args.trap_prose, hosts=hosts)
