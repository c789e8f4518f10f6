"""Settings tables (extensions/config.py): one reader, one error format, one place a default
is written (crawlproj/settings.py), and a crawl preflight that checks every table."""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

import crawlproj.settings
from crawlproj.commands.crawl import TABLES, StartupError, check_settings, preflight
from extensions.admission.priorities import FRONT_QUEUES
from extensions.config import STRINGS, TEXT, Setting, Table, at_least, read
from extensions.content.neardup_config import DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE
from tests.project_settings import project_settings

ROOT = Path(__file__).resolve().parents[2]
ALL_SETTINGS = {s.name: s for table in TABLES for s in table.settings}


@dataclasses.dataclass(frozen=True)
class Knobs:
    low: float
    high: float
    extra: str


KNOBS = Table(
    Knobs, Setting("A_LOW", "low", float), Setting("A_HIGH", "high", float, at_least("A_LOW"))
)


def test_read_fills_the_dataclass_from_settings_and_fields() -> None:
    knobs = read(KNOBS, Settings({"A_LOW": "1.5", "A_HIGH": 2}), extra="x")
    assert knobs == Knobs(1.5, 2.0, "x")


def test_a_missing_setting_is_an_error_not_a_default() -> None:
    with pytest.raises(ValueError, match=r"^A_HIGH is not set: crawlproj/settings.py gives"):
        read(KNOBS, Settings({"A_LOW": 1}), extra="x")


def test_a_bound_may_name_an_earlier_setting_or_a_context_value() -> None:
    with pytest.raises(ValueError, match=r"^A_HIGH must be >= A_LOW \(3\), not 2$"):
        read(KNOBS, Settings({"A_LOW": 3, "A_HIGH": 2}), extra="x")
    queue = Setting("Q", "q", int, at_least(FRONT_QUEUES))
    with pytest.raises(ValueError, match=r"^Q must be >= front queues \(4\), not 1$"):
        queue.read(Settings({"Q": 1}), {FRONT_QUEUES: 4})


def test_optional_zero_is_off_and_its_rules_say_so() -> None:
    limit = Setting("L", "limit", int, at_least(1), optional=True)
    assert limit.read(Settings({"L": 0})) is None
    assert limit.read(Settings({"L": "7"})) == 7
    with pytest.raises(ValueError, match=r"^L must be 0 or >= 1, not -1$"):
        limit.read(Settings({"L": -1}))


# --- every table against crawlproj/settings.py ---------------------------------------------


def test_every_setting_of_a_table_is_in_settings_py() -> None:
    missing = [name for name in ALL_SETTINGS if not hasattr(crawlproj.settings, name)]
    assert not missing, f"give these a default in crawlproj/settings.py: {missing}"


def test_every_number_and_switch_of_settings_py_is_in_a_table() -> None:
    numbers = [
        name
        for name in dir(crawlproj.settings)
        if name.isupper() and isinstance(getattr(crawlproj.settings, name), bool | int | float)
    ]
    assert [name for name in numbers if name not in ALL_SETTINGS] == []


def test_dataclass_defaults_equal_settings_py() -> None:
    """Defaults kept for code that builds a config directly may not drift from settings.py."""
    context = {FRONT_QUEUES: len(crawlproj.settings.FRONTIER_PRIORITY_WEIGHTS)}
    with_defaults = set()
    for table in TABLES:
        if not dataclasses.is_dataclass(table.into):
            continue
        fields = {f.name: f for f in dataclasses.fields(table.into)}
        values = table.check(project_settings(), context)
        for setting in table.settings:
            field = fields[setting.field]
            if field.default is not dataclasses.MISSING:
                assert field.default == values[setting.name], (table, setting.name)
                with_defaults.add(table.into.__name__)
    # The configs benches and tests still build directly; FrontierConfig has none left.
    expected = {"BloomConfig", "RecentConfig", "RobotsPolicy", "RecrawlConfig", "ScheduleConfig"}
    assert with_defaults == expected
    assert (DEFAULT_MAX_DISTANCE, DEFAULT_MIN_RESEMBLANCE) == (
        crawlproj.settings.NEARDUP_MAX_DISTANCE,
        crawlproj.settings.NEARDUP_MIN_RESEMBLANCE,
    )


def module_tables() -> list[tuple[str, str]]:
    """(module, name) of every module-level `NAME = Table(...)` in the packages."""
    found = []
    for path in sorted([*ROOT.glob("extensions/**/*.py"), *ROOT.glob("crawlproj/**/*.py")]):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            call = value.func if isinstance(value, ast.Call) else None
            if isinstance(call, ast.Name) and call.id == "Table":
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                assert isinstance(target, ast.Name)
                found.append((module, target.id))
    return found


def test_the_preflight_checks_every_table() -> None:
    tables = module_tables()
    assert len(tables) == len(TABLES)
    for module, name in tables:
        assert getattr(importlib.import_module(module), name) in TABLES, f"{module}.{name}"


# --- every rule rejects a bad value, and the preflight names the setting --------------------

BAD = [
    ("FRONTIER_PRIORITY_WEIGHTS", "4,0", "weights > 0, one per priority, not [4, 0]"),
    ("DOWNLOAD_TIMEOUT", 0, "> 0, not 0"),
    ("FRONTIER_LEASE_TTL", 20, "0 or > DOWNLOAD_TIMEOUT (30), not 20"),
    ("FRONTIER_DELAY", -1, ">= 0, not -1"),
    ("FRONTIER_BACK_QUEUES", 0, ">= 1, not 0"),
    ("FRONTIER_IP_CONCURRENCY", 0, ">= 1, not 0"),
    ("FRONTIER_BACKOFF_BASE", 0, "> 0, not 0"),
    ("FRONTIER_FAILURE_BACKOFF_BASE", 0.5, ">= 1, not 0.5"),
    ("FRONTIER_BACKOFF_MAX", 4, ">= FRONTIER_BACKOFF_BASE (5), not 4"),
    ("FRONTIER_QUARANTINE_AFTER", 0, ">= 1, not 0"),
    ("FRONTIER_QUARANTINE_S", -1, ">= 0, not -1"),
    ("FRONTIER_QUARANTINE_MAX", 60, ">= FRONTIER_QUARANTINE_S (600), not 60"),
    ("FRONTIER_DOWN_AFTER", -1, ">= 0, not -1"),
    ("FRONTIER_RATE_STEP", 0, "> 0, not 0"),
    ("FRONTIER_RATE_STEP", 1.5, "<= 1, not 1.5"),
    ("FRONTIER_ADAPTIVE_DELAY_FACTOR", -0.5, ">= 0, not -0.5"),
    ("FRONTIER_MAX_BACKOFFS", -1, ">= 0, not -1"),
    ("FRONTIER_MAX_PAGES_PER_HOST", -1, ">= 0, not -1"),
    ("URL_MAX_PER_PATTERN", -1, ">= 0, not -1"),
    ("RECRAWL_SHARE", 1.5, "in 0..1, not 1.5"),
    ("PRIORITY_LANES", 0, ">= 1, not 0"),
    ("PRIORITY_SEED_SCORE", 101, "in 0..100, not 101"),
    ("PRIORITY_SITEMAP_SCORE", -1, "in 0..100, not -1"),
    ("PRIORITY_LINK_SCORE", 200, "in 0..100, not 200"),
    ("PRIORITY_INHERIT", 1.5, "in 0..1, not 1.5"),
    ("PRIORITY_DEPTH_PENALTY", -1, ">= 0, not -1"),
    ("PRIORITY_PARAM_PENALTY", -1, ">= 0, not -1"),
    ("PRIORITY_FACET_PENALTY", -2, ">= 0, not -2"),
    ("PRIORITY_REFINE_PENALTY", -1, ">= 0, not -1"),
    ("PRIORITY_CALENDAR_PENALTY", -1, ">= 0, not -1"),
    ("PRIORITY_GROWTH_PENALTY", -1, ">= 0, not -1"),
    ("PRIORITY_PATTERNS_PER_HOST", 0, ">= 1, not 0"),
    ("PRIORITY_TRAP_WINDOW", 0.5, ">= 1, not 0.5"),
    ("PRIORITY_TRAP_MIN_PAGES", 0, ">= 1, not 0"),
    ("PRIORITY_TRAP_DEMOTE_SHARE", 2, "in 0..1, not 2"),
    ("PRIORITY_TRAP_CLOSE_SHARE", -0.1, "in 0..1, not -0.1"),
    ("PRIORITY_TRAP_REOPEN_AFTER", 0, ">= 1, not 0"),
    ("PRIORITY_TRAP_PROBE_EVERY", 0, ">= 1, not 0"),
    ("PRIORITY_TRAP_SPRAWL_AFTER", -1, ">= 0, not -1"),
    ("PRIORITY_SPRAWL_MIN_LINKS", -1, ">= 0, not -1"),
    ("PRIORITY_FACET_SIDEBAR_NAMES", -1, ">= 0, not -1"),
    ("PRIORITY_REDIRECT_WALK", -1, ">= 0, not -1"),
    ("PRIORITY_NEW_ITEMS", -1, ">= 0, not -1"),
    ("PRIORITY_SPRAWL_MENU_PAGES", 1, ">= 2, not 1"),
    ("PRIORITY_SPRAWL_CHAIN", -1, ">= 0, not -1"),
    ("PRIORITY_SPRAWL_CHAIN_SITE_PAGES", -1, ">= 0, not -1"),
    (
        "PRIORITY_TRAP_END_AFTER",
        1,
        "0 (off) or >= 2: one broken link must not end a sequence, not 1",
    ),
    ("PRIORITY_DEMOTE_PENALTY", -5, ">= 0, not -5"),
    ("PRIORITY_FACET_MAX", -1, ">= 0, not -1"),
    ("PRIORITY_HOST_WEIGHT", -1, ">= 0, not -1"),
    ("PRIORITY_HOST_BONUS_MAX", -1, ">= 0, not -1"),
    ("PRIORITY_HOST_BUDGET", -1, ">= 0, not -1"),
    ("PRIORITY_HOST_BUDGET_SEEDED", -1, ">= 0, not -1"),
    ("PRIORITY_HOST_BUDGET_PER_REFERRER", -1, ">= 0, not -1"),
    ("PRIORITY_HOST_BUDGET_PER_SITEMAP_URL", -1, ">= 0, not -1"),
    ("PRIORITY_NOISE_AFTER", -1, ">= 0, not -1"),
    ("FRONTIER_POLL_INTERVAL", 0, "> 0, not 0"),
    ("FRONTIER_DNS_RETRIES", -1, ">= 0, not -1"),
    ("FRONTIER_DNS_RETRY_DELAY", 0, "> 0, not 0"),
    ("FRONTIER_MAX_REDIS_FAILURES", 0, ">= 1, not 0"),
    ("URL_BLOCKLIST_REFRESH", 0, "> 0, not 0"),
    ("ROBOTS_MAX_CRAWL_DELAY", -1, ">= 0, not -1"),
    ("ROBOTS_MAX_ERROR_RETRIES", -1, ">= 0, not -1"),
    ("FRONTIER_SHARDS", -1, ">= 0, not -1"),
    ("FRONTIER_MAX_PROCESSING", -1, ">= 0, not -1"),
    ("URL_MAX_LENGTH", -1, "0 or >= 1, not -1"),
    ("CRAWL_MAX_DEPTH", -1, "0 or >= 1, not -1"),
    ("URL_MAX_QUERY_PARAMS", -1, "0 or >= 1, not -1"),
    ("URL_MAX_REPEATED_SEGMENTS", -1, "0 or >= 1, not -1"),
    ("URL_PAGE_TOKEN_MIN_LINKS", 1, ">= 2, not 1"),
    ("URL_PAGE_TOKEN_SHARE", 0.5, "> 0.5, not 0.5"),
    ("URL_PAGE_TOKEN_SHARE", 1.5, "<= 1, not 1.5"),
    ("URL_PAGE_TOKEN_MIN_CHARS", 0, ">= 1, not 0"),
    (
        "CONTENT_TYPES_WANTED",
        "text/html,html",
        "media types like text/html, not ['text/html', 'html']",
    ),
    ("DNS_IPV6", "maybe", "true or false, not 'maybe'"),
    ("DNS_TTL_MIN", 0, "> 0, not 0"),
    ("DNS_CACHE_TTL", 0, "> 0, not 0"),
    ("DNS_CACHE_TTL", 30, ">= DNS_TTL_MIN (60), not 30"),
    (
        "DNS_SERVERS",
        "8.8.8.8:99999",
        "name server addresses ('ip' or 'ip:port'), a list or comma-separated, not '8.8.8.8:99999'",
    ),
    ("DNS_CACHE_STALE_MAX", 0, "> 0, not 0"),
    ("DNS_NEGATIVE_TTL", 0, "> 0, not 0"),
    ("DNS_TIMEOUT", 0, "> 0, not 0"),
    ("SEEN_BITS_PER_KEY", 1, "in 2..64, not 1"),
    ("SEEN_CAPACITY", 0, ">= 1, not 0"),
    ("SEEN_GROWTH", 3, "one of 1, 2, not 3"),
    ("SEEN_LOCAL_CACHE", -1, ">= 0, not -1"),
    ("ROBOTS_USER_AGENT", "crawlproj/1.0", "a product token of A-Z a-z - _, not 'crawlproj/1.0'"),
    ("ROBOTS_CACHE_TTL", "inf", "a finite number of seconds > 0, not inf"),
    ("ROBOTS_MAX_ERROR_TTL", 0, "a finite number of seconds > 0, not 0"),
    ("ROBOTS_ERROR_TTL", -1, "a finite number of seconds > 0, not -1"),
    ("ROBOTS_ERROR_TTL", 100000, "<= ROBOTS_MAX_ERROR_TTL (86400), not 100000"),
    ("ROBOTS_MAX_BYTES", 1000, ">= 512000, not 1000"),
    ("ROBOTS_FETCH_TIMEOUT", 0, "a finite number of seconds > 0, not 0"),
    ("RECRAWL_POLICY", "fastest", "one of uniform, proportional, optimal, not 'fastest'"),
    ("RECRAWL_MIN_INTERVAL", 0, "> 0, not 0"),
    ("RECRAWL_INTERVAL", 60, ">= RECRAWL_MIN_INTERVAL (3600), not 60"),
    ("RECRAWL_MAX_INTERVAL", 3600, ">= RECRAWL_INTERVAL (86400), not 3600"),
    ("RECRAWL_CAP_FRESHNESS", -0.1, ">= 0, not -0.1"),
    ("RECRAWL_CAP_FRESHNESS", 1, "< 1, not 1"),
    ("RECRAWL_PRIORITY", 5, "a front queue, 0..4, not 5"),
    ("RECRAWL_BATCH", 0, ">= 1, not 0"),
    ("RECRAWL_MAX_QUEUED", 0, ">= 1, not 0"),
    ("RECRAWL_CLAIM_TTL", 0, "> 0, not 0"),
    ("RECRAWL_HISTORY", 0, ">= 1, not 0"),
    ("RECRAWL_MIN_HISTORY", 17, "in 1..RECRAWL_HISTORY (16), not 17"),
    ("RECRAWL_TICK", 0, "> 0, not 0"),
    ("RECRAWL_SCHEDULE_REFRESH", 0, "> 0, not 0"),
    ("DOWNLOAD_CONNECT_TIMEOUT", 0, "> 0, not 0"),
    ("NEARDUP_MAX_DISTANCE", 33, "in 0..32, not 33"),
    ("NEARDUP_MIN_RESEMBLANCE", 0.3, "in 0.5..1, not 0.3"),
    ("NEARDUP_BLOCKS", 17, "in 1..16, not 17"),
    (
        "NEARDUP_BLOCKS",
        1,
        "a block count needing <= 20000 look-ups at NEARDUP_MAX_DISTANCE 13, not 1",
    ),
    ("NEARDUP_BUCKET_CAP", 0, "in 1..1000000, not 0"),
    ("NEARDUP_MAX_CANDIDATES", 0, "in 1..10000, not 0"),
    ("NEARDUP_MIN_WORDS", -1, "in 0..1000000, not -1"),
    ("NEARDUP_THREADS", 0, "in 1..64, not 0"),
    ("SOFT404_MIN_RESEMBLANCE", 0.05, "in 0.1..1, not 0.05"),
    ("SOFT404_MIN_CONTAINMENT", 1.5, "in 0.1..1, not 1.5"),
    ("PAGESTORE_RETRIES", -1, ">= 0, not -1"),
    ("PAGESTORE_RETRY_DELAY", -1, ">= 0, not -1"),
    ("PAGESTORE_THREADS", 0, "in 1..256, not 0"),
    ("PAGESTORE_TIMEOUT", 0, "> 0, not 0"),
    ("WARC_MAX_SIZE", 1000, ">= 1024, not 1000"),
    ("WARC_PREFIX", "my/crawl", "1-64 of [A-Za-z0-9_.-], not 'my/crawl'"),
    ("METRICS_PORT", 70000, "in 0..65535, not 70000"),
    ("METRICS_BIND", "localhost", "an IP address, not 'localhost'"),
    ("METRICS_REDIS_INTERVAL", -1, ">= 0, not -1"),
    ("SHARED_STATS_INTERVAL", -1, ">= 0, not -1"),
    ("CRAWL_DATA_DIR", "", "a folder, not ''"),
    ("REDIS_START_TIMEOUT", 0, "> 0, not 0"),
    ("DOWNLOAD_DELAY", -1, ">= 0, not -1"),
    ("CONCURRENT_REQUESTS", 0, ">= 1, not 0"),
    ("CONCURRENT_REQUESTS_PER_DOMAIN", 0, ">= 1, not 0"),
    ("CONCURRENT_ITEMS", 0, ">= 1, not 0"),
    ("DOWNLOAD_MAXSIZE", -1, ">= 0, not -1"),
    ("DOWNLOAD_WARNSIZE", -1, ">= 0, not -1"),
    ("REDIRECT_MAX_TIMES", -1, ">= 0, not -1"),
    ("RETRY_TIMES", -1, ">= 0, not -1"),
    ("DEPTH_LIMIT", -1, ">= 0, not -1"),
]


def preflight_error(tmp_path: Path, name: str, value: Any) -> str:
    settings = project_settings({"CRAWL_DATA_DIR": str(tmp_path / "data"), name: value})
    with pytest.raises(StartupError) as caught:
        preflight(settings, {})
    return str(caught.value)


@pytest.mark.parametrize(("name", "value", "must"), BAD)
def test_every_rule_rejects_a_bad_value_in_one_line(
    tmp_path: Path, name: str, value: Any, must: str
) -> None:
    assert preflight_error(tmp_path, name, value) == f"{name} must be {must}"


def test_every_rule_has_a_bad_value() -> None:
    cases = [name for name, _, _ in BAD]
    short = {n: len(s.rules) for n, s in ALL_SETTINGS.items() if cases.count(n) < len(s.rules)}
    assert not short, f"add a bad value for each rule of {short}"


@pytest.mark.parametrize(
    "setting", [s for s in ALL_SETTINGS.values() if s.kind not in (TEXT, STRINGS)], ids=repr
)
def test_the_preflight_names_a_value_of_the_wrong_kind(tmp_path: Path, setting: Setting) -> None:
    message = f"{setting.name} must be {setting.kind.what}, not 'x!'"
    assert preflight_error(tmp_path, setting.name, "x!") == message


def test_the_project_defaults_pass(tmp_path: Path) -> None:
    check_settings(project_settings())
    preflight(project_settings({"CRAWL_DATA_DIR": str(tmp_path / "data")}), {})
