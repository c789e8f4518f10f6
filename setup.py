"""Packaging for scrapyd eggs (scrapyd-deploy) and editable installs.

scrapyd-client drops top-level packages without __init__.py, and Lua scripts
are data files: both are listed explicitly here so a deployed egg runs.
"""

from setuptools import find_packages, setup

setup(
    name="crawlproj",
    version="0.1.0",
    packages=find_packages(include=["crawlproj*", "extensions*"]),
    package_data={
        "extensions.frontier": ["lua/*.lua"],
        "extensions.recrawl": ["lua/*.lua"],
        "extensions.content": ["lua/*.lua"],
    },
    include_package_data=True,
    entry_points={"scrapy": ["settings = crawlproj.settings"]},
    python_requires=">=3.11",
)
