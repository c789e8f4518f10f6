"""Registered domains (eTLD+1): the unit above a host that one owner controls.

Trap feedback counts per host, and a wildcard-DNS trap (every name under a domain
answers, and its pages link made-up names: w3f9a1.farm.test) is a new host per URL, so
nothing learnt per host ever closes it. Hosts under one registered domain are one
owner's; patterns.family_of gives a subdomain's URL a second family, its siblings'
pattern (or its fine one where it has none) with the host replaced by
"*.<registered domain>", which every subdomain's pages judge together.

The Public Suffix List is tldextract's bundled snapshot (a Scrapy dependency), never
fetched: a crawl makes no request it was not asked for. Its private section counts, so
every blogspot.com or github.io site is a registered domain of its own. A name whose
suffix the list does not hold (.test, .internal, a bare name) is read with its last
label as the suffix; an IP address is its own domain.
"""

from __future__ import annotations

import logging

import tldextract

from extensions.admission.memo import recall
from extensions.dns.cache import ip_literal

# No suffix_list_urls: the bundled snapshot, no network; no cache_dir: nothing written.
_EXTRACT = tldextract.TLDExtract(
    suffix_list_urls=(), cache_dir=None, include_psl_private_domains=True
)
_DOMAINS: dict[str, str] = {}
# tldextract logs at INFO that it reads its snapshot: nothing for an operator to do.
logging.getLogger("tldextract").setLevel(logging.WARNING)


def registered_domain(host: str) -> str:
    """The host's registered domain: "a.b.example.co.uk" -> "example.co.uk"."""
    return recall(_DOMAINS, host, _registered_domain)


def _registered_domain(host: str) -> str:
    if not host or ip_literal(host) is not None:
        return host
    parts = _EXTRACT(host)
    if parts.suffix and parts.domain:
        return f"{parts.domain}.{parts.suffix}"
    labels = host.split(".")
    return ".".join(labels[-2:])
