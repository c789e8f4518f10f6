"""Golden sample of the admission path: URL + meta -> AdmitItem, frozen in
data/admission_golden.json by the code before its speed-up (2026-12-01).

Regenerate only when admission is meant to change what it admits:
    .venv/bin/python -m tests.unit.admission.golden_admission \
        > tests/unit/admission/data/admission_golden.json
"""

from __future__ import annotations

import json
import sys
from typing import Any
from unittest import mock

from scrapy import Request, Spider

from extensions.admission.admit import Admission, Rejected, url_filter_from_settings
from extensions.admission.canonical import Canonicalizer
from extensions.admission.prioritizer import PARENT_META, SCORE_META, SOURCE_META, Prioritizer
from extensions.dns.cache import DnsSettings, HostResolver
from tests.project_settings import project_settings

FIXED_NOW_S = 1_700_000_000.0
HOSTS = ("h.test", "shop.test", "b\u00fccher.test", "cal.test", "x.test")
PATHS = (
    "/",
    "",
    "/a/b/../c/./d",
    "/section/12/article-345.html",
    "/s/3f2a9c0e4b5d6a7f8e9d/view",
    "/s/3F2A9C0E-4B5D-6A7F-8E9D/x",
    "/calendar/2024/05",
    "/blog/2024/05/17/my-post",
    "/events/2024-05-17/",
    "/a/a/a/a",
    "/p1/p2/p3/x",
    "/more/more1/more2",
    "/" + "y" * 40 + "/z",
    "/caf\u00e9/%7euser/%41b%zz",
    "/img/logo.PNG",
    "/docs/x.rst.txt",
    "/robots.txt",
    "/sitemap.xml.gz",
    "/a;jsessionid=ABC;v=1/b",
    "/a/b/a/b/a/b/a/b",
)
QUERIES = (
    "",
    "?id=7",
    "?b=2&a=1&utm_source=x",
    "?color=red&size=m",
    "?color=red&size=m&sort=price&page=3",
    "?year=2024&month=5",
    "?q=%2a%2B&Q=x&&x",
    "?sid=abc&view=list",
    "?visit=17&id=3",
    "?" + "&".join(f"p{i}=1" for i in range(20)),
    "#frag",
)
METAS: tuple[dict[str, Any], ...] = (
    {},
    {"depth": 1},
    {"depth": 3, SOURCE_META: "link", PARENT_META: (80, "http://h.test/section/1")},
    {"depth": 2, SOURCE_META: "link", PARENT_META: (None, "http://shop.test/shop/?color=red")},
    {"depth": 1, SOURCE_META: "sitemap", PARENT_META: (None, "http://x.test/sitemap.xml")},
    {"depth": 5, SCORE_META: 42},
    {"depth": 20},
    {"depth": 1, "recrawl": True, "frontier_priority": 9},
    {"depth": 1, "custom": [1, "two"], "frontier_priority": 0},
)


class GoldenSpider(Spider):
    name = "golden"

    def parse(self, response: object) -> None:
        return None

    def other(self, response: object) -> None:
        return None


def admission() -> Admission:
    # x.test stays unresolved (ip ""); 10.0.0.1 is refused by the address policy.
    hosts = {"h.test": "203.0.113.1", "shop.test": "203.0.113.2", "cal.test": "203.0.113.3"}
    hosts["xn--bcher-kva.test"] = "203.0.113.4"
    settings = project_settings(
        {
            "URL_SKIP_EXTENSIONS": ["png", "txt", "gz"],
            "DNS_ALLOWED_NETWORKS": "203.0.113.0/24,2001:db8::/32",
            "DNS_HOSTS_MAP": hosts,
            "DNS_HOSTS_MAP_ONLY": True,
        }
    )
    resolver = HostResolver(DnsSettings.from_settings(settings))
    filters, prioritizer = url_filter_from_settings(settings), Prioritizer.from_settings(settings)
    adm = Admission(Canonicalizer(), filters, resolver, prioritizer, 5, False)
    adm.noise = {"x.test": frozenset({"visit"})}
    return adm


def requests(spider: GoldenSpider) -> list[Request]:
    """Every host x path x query under a few metas, plus odd request kinds."""
    out = []
    n = 0
    for host in HOSTS:
        for path in PATHS:
            for query in QUERIES:
                meta = dict(METAS[n % len(METAS)])
                n += 1
                out.append(Request(f"http://{host}{path}{query}", meta=meta))
    out.append(Request("https://h.test:443/a", priority=2, dont_filter=True))
    out.append(Request("https://h.test:8443/a", method="POST", body=b"x=1", callback=spider.other))
    out.append(
        Request("http://[2001:DB8::1]:8080/a?b", headers={"X-A": "1", "Referer": "http://r/"})
    )
    out.append(Request("http://203.0.113.9/a", cb_kwargs={"k": 1}, priority=-3))
    out.append(Request("http://10.0.0.1/private"))
    out.append(Request("http://bad_host!.test/"))
    return out


def outcome(adm: Admission, request: Request, spider: Spider) -> Any:
    try:
        item = adm.item(request, spider)
    except Rejected as exc:
        return exc.reason
    return item.lua()


def golden() -> list[tuple[str, str, Any]]:
    spider = GoldenSpider()
    adm = admission()
    with mock.patch("extensions.admission.records.time.time", return_value=FIXED_NOW_S):
        return [(r.url, repr(sorted(r.meta)), outcome(adm, r, spider)) for r in requests(spider)]


if __name__ == "__main__":
    # One case per line: a change shows as the lines of the cases it changed.
    rows = [json.dumps(row, ensure_ascii=False) for row in golden()]
    sys.stdout.write("[\n" + ",\n".join(rows) + "\n]\n")
