"""DNS_HOSTS_MAP: static name -> address pins, the way curl's --resolve does, so tests
and the demo map their virtual hosts to 127.x addresses without root or /etc/hosts edits.
A "*.example.test" key pins every name under example.test (not the name itself), as a
wildcard DNS record does; an exact key wins over it."""

from __future__ import annotations

import ipaddress
import json
from typing import Any


def parse_hosts_map(raw: Any) -> dict[str, str]:
    """DNS_HOSTS_MAP as a dict, from a dict, a JSON object or "host=ip,host2=ip"."""
    if not raw:
        return {}
    if isinstance(raw, str):
        text = raw.strip()
        if text.startswith("{"):
            try:
                raw = json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"DNS_HOSTS_MAP is not valid JSON: {exc}") from None
        else:
            raw = dict(_pair(item) for item in text.split(",") if item.strip())
    if not isinstance(raw, dict):
        raise ValueError("DNS_HOSTS_MAP must be a dict, a JSON object or 'host=ip,...'")
    hosts: dict[str, str] = {}
    for host, ip in raw.items():
        try:
            hosts[str(host).lower().rstrip(".")] = str(ipaddress.ip_address(str(ip).strip()))
        except ValueError:
            raise ValueError(f"DNS_HOSTS_MAP: {ip!r} for {host!r} is not an IP address") from None
    return hosts


def pinned(hosts: dict[str, str], host: str) -> str | None:
    """The address DNS_HOSTS_MAP pins `host` to: its own key, else the nearest "*.parent"."""
    if not hosts:
        return None
    ip = hosts.get(host)
    dot = host.find(".")
    while ip is None and dot >= 0:
        ip = hosts.get("*" + host[dot:])
        dot = host.find(".", dot + 1)
    return ip


def _pair(item: str) -> tuple[str, str]:
    host, sep, ip = item.partition("=")
    if not sep:
        raise ValueError(f"DNS_HOSTS_MAP entry {item.strip()!r} is not host=ip")
    return host.strip(), ip.strip()
