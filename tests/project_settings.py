"""crawlproj/settings.py as the crawl sees it, for tests that build components directly.

Components read their settings with no default of their own (extensions/config.py), so a
bare `Settings()` lacks them; these helpers start from the project's defaults instead.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from scrapy.settings import Settings

import crawlproj.settings
from extensions.frontier.config import frontier_config
from extensions.frontier.core import FrontierConfig


def project_settings(values: Mapping[str, Any] | None = None) -> Settings:
    """The project's settings with `values` on top, as `-s NAME=VALUE` would set them."""
    settings = Settings()
    settings.setmodule("crawlproj.settings", priority="project")
    settings.update(dict(values or {}), priority="cmdline")
    return settings


def project_values(values: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """crawlproj/settings.py's values with `values` on top, as a dict for helpers that take
    one (scrapy.utils.test.get_crawler)."""
    module = crawlproj.settings
    return {**{k: getattr(module, k) for k in dir(module) if k.isupper()}, **(values or {})}


def project_frontier_config(**fields: Any) -> FrontierConfig:
    """The FrontierConfig of crawlproj/settings.py with `fields` replaced."""
    return dataclasses.replace(frontier_config(project_settings()), **fields)
