"""URL canonicalization for the frontier: one fetchable URL, one string.

Pure functions, no I/O. Only RFC 3986 "safe" normalisations are applied
(case of scheme/host, default port, dot segments, percent-encoding case and
unreserved decoding) plus two lossy-but-deliberate ones: the fragment and
tracking/session parameters are dropped, and query parameters are sorted.
Where RFC 3986 and browsers disagree on link resolution (backslashes,
``http:host``, extra slashes, numeric IPv4 hosts) we follow the WHATWG URL
standard, because links on the web are written for browsers.

URL filters (depth, length, traps, block rules) live in
:mod:`extensions.admission.filters` and are re-exported here for convenience.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import unquote

import idna  # IDNA 2008 + UTS #46; a Scrapy dependency (via tldextract)

from extensions.admission.filters import (
    BlockRules,
    UrlFilter,
    compile_block_rules,
    host_of,
)
from extensions.admission.url_params import (
    DEFAULT_SESSION_PARAMS,
    DEFAULT_TRACKING_PARAMS,
    param_matcher,
    strip_aspnet_state,
)

__all__ = [
    "DEFAULT_SESSION_PARAMS",
    "DEFAULT_TRACKING_PARAMS",
    "BlockRules",
    "Canonicalizer",
    "UrlFilter",
    "base_href",
    "canonicalize",
    "compile_block_rules",
    "host_of",
]

_DEFAULT_PORTS = {"http": 80, "https": 443}
_SCHEME_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")
# WHATWG strips leading/trailing C0 controls and spaces, and drops tabs/newlines anywhere.
_STRIP_CHARS = "".join(map(chr, range(0x21)))
_DROP_TAB_NL = str.maketrans("", "", "\t\n\r")

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# "%xx" (upper-cased) -> canonical form: the character if unreserved, else the upper-cased escape.
_ESCAPES = {f"%{i:02X}": (chr(i) if chr(i) in _UNRESERVED else f"%{i:02X}") for i in range(256)}
_BYTE_ESCAPES = [f"%{i:02X}" for i in range(256)]
# Characters allowed raw (RFC 3986 pchar + "/" [+ "?" in the query]); anything else is escaped.
_PATH_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/]*").fullmatch
_QUERY_OK = re.compile(r"[A-Za-z0-9\-._~!$&'()*+,;=:@/?]*").fullmatch
# Alternatives: a valid escape | a run of characters to encode | a lone "%" (encoded as %25).
_PATH_FIX = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/%]+|%")
_QUERY_FIX = re.compile(r"%[0-9A-Fa-f]{2}|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]+|%")

# An absolute http(s) link as pages mostly write them: lower-case scheme, "//", an
# authority without userinfo, escapes or controls, a path of raw pchars, a query without
# controls or fragment. canonicalize() skips its general parse for these (the same
# _canon_authority and _assemble finish them), on admission's hot path.
_PLAIN_URL = re.compile(
    r"(https?)://([^\x00-\x20/?#\\%@\[\]]+)(/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*)(?:\?([^#\x00-\x20]*))?"
).fullmatch
_HOST_RE = re.compile(r"[a-z0-9_\-]{1,63}(?:\.[a-z0-9_\-]{1,63})*")
_IPV4_PART = re.compile(r"0x[0-9a-f]*|[0-9]+")


def _fix_escape(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "%":
        return _ESCAPES[text.upper()] if len(text) == 3 else "%25"
    # surrogatepass: a lone surrogate still gets a deterministic (if odd) encoding.
    return "".join([_BYTE_ESCAPES[b] for b in text.encode("utf-8", "surrogatepass")])


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 5.2.4 for an absolute path; ``..`` above the root is dropped."""
    segments = path.split("/")[1:]
    out: list[str] = []
    for segment in segments:
        if segment == "..":
            if out:
                out.pop()
        elif segment != ".":
            out.append(segment)
    if segments[-1] in (".", ".."):
        out.append("")  # "/a/b/.." is the directory "/a/", keep the trailing slash
    return "/" + "/".join(out)


def _idna_encode(host: str) -> str | None:
    """IDNA 2008 + UTS #46 (what browsers do), else the stdlib's IDNA 2003 codec."""
    try:
        return idna.encode(host, uts46=True).decode("ascii")
    except (UnicodeError, ValueError):
        pass  # IDNA 2008 rejects e.g. emoji hosts that browsers still resolve
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return None


def _canon_ipv4(host: str) -> str | None:
    """WHATWG IPv4 parsing: ``0x7f.1`` and ``2130706433`` are 127.0.0.1 to a browser."""
    parts = host.split(".")
    if len(parts) > 4 or not all(_IPV4_PART.fullmatch(p) for p in parts):
        return None
    try:
        nums = [
            int(p[2:] or "0", 16) if p[:2] == "0x" else int(p, 8 if p[0] == "0" else 10)
            for p in parts
        ]
    except ValueError:  # e.g. "09": octal by its leading zero, but not valid octal
        return None
    if any(n > 255 for n in nums[:-1]) or nums[-1] >= 256 ** (5 - len(nums)):
        return None
    value = nums[-1]
    for i, n in enumerate(nums[:-1]):
        value += n << (8 * (3 - i))
    return str(ipaddress.IPv4Address(value))


def _canon_host(host: str) -> str | None:
    if host.startswith("["):
        if not host.endswith("]") or "%" in host:  # zone ids are not fetchable
            return None
        try:
            return f"[{ipaddress.IPv6Address(host[1:-1]).compressed}]"
        except ValueError:
            return None
    if "%" in host:
        try:
            host = unquote(host, errors="strict")
        except UnicodeDecodeError:
            return None
    if not host.isascii():
        encoded = _idna_encode(host)
        if encoded is None:
            return None
        host = encoded
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if len(host) > 253 or not _HOST_RE.fullmatch(host):
        return None
    last_label = host.rpartition(".")[2]
    if last_label[0].isdigit():  # a numeric last label makes the whole host an IPv4 address
        return _canon_ipv4(host)
    return host


@functools.lru_cache(maxsize=8192)
def _canon_authority(authority: str, scheme: str) -> str | None:
    """Canonical ``host[:port]``; cached because hosts repeat heavily within a crawl."""
    # Userinfo is dropped: credentials must not be stored in the frontier, logged or sent to
    # other hosts, and servers must not see one URL under several user names.
    hostport = authority.rpartition("@")[2]
    if hostport.startswith("["):
        end = hostport.find("]") + 1
        host, port = hostport[:end], hostport[end:]
        if end == 0 or (port and port[0] != ":"):
            return None
        port = port[1:]
    else:
        host, _, port = hostport.partition(":")
    canon = _canon_host(host)
    if canon is None:
        return None
    if not port:  # "http://h:/" means the default port (RFC 3986 3.2.3)
        return canon
    if not (port.isascii() and port.isdigit()):
        return None
    number = int(port)
    if not 0 < number <= 65535:  # port 0 parses but can never be fetched
        return None
    return canon if number == _DEFAULT_PORTS[scheme] else f"{canon}:{number}"


class Canonicalizer:
    """Canonicalizes URLs with parameter lists read once (from settings)."""

    def __init__(
        self,
        tracking_params: Iterable[str] = DEFAULT_TRACKING_PARAMS,
        session_params: Iterable[str] = DEFAULT_SESSION_PARAMS,
        *,
        path_sessions: bool = True,
    ) -> None:
        """path_sessions: drop the session state in paths too (with_path_session's twin
        keeps it)."""
        self.tracking_params = tuple(tracking_params)
        self.session_params = tuple(session_params)
        self._drop = param_matcher(self.tracking_params + self.session_params)
        self._drop_path = param_matcher(self.session_params)
        self._strips_path_params = path_sessions and bool(self.session_params)
        # Pages yield many links against one base: parse each base once.
        self._base_parts = functools.lru_cache(maxsize=1024)(self._parse_base)
        self._keeps_path_sessions: Canonicalizer | None = None  # with_path_session's

    def __call__(self, url: str, base: str | None = None) -> str | None:
        return self.canonicalize(url, base)

    def canonicalize(self, url: str, base: str | None = None) -> str | None:
        """Return the canonical form of ``url`` (resolved against ``base``), or None."""
        plain = _PLAIN_URL(url)
        if plain is not None:  # absolute: the base does not matter
            scheme, authority, path, query = plain.groups()
            canon_authority = _canon_authority(authority, scheme)
            if canon_authority is None:
                return None
            if query or ";" in path or "/." in path or "(" in path:
                return self._assemble(scheme, canon_authority, path, query or "")
            return f"{scheme}://{canon_authority}{path}"  # its path is already canonical
        url = url.strip(_STRIP_CHARS)
        if "\t" in url or "\n" in url or "\r" in url:
            url = url.translate(_DROP_TAB_NL)
        match = _SCHEME_RE.match(url)
        scheme = ""
        if match:
            scheme = url[: match.end() - 1].lower()
            if scheme not in _DEFAULT_PORTS:
                return None  # javascript:, mailto:, data:, ftp:, tel: ...
            url = url[match.end() :]
        head, has_query, query = url.partition("#")[0].partition("?")
        if "\\" in head:
            head = head.replace("\\", "/")  # browsers treat "\" as "/" in http(s) URLs
        if scheme and not head.startswith("//"):
            base_parts = self._base_parts(base) if base else None
            if base_parts and base_parts[0] == scheme:
                scheme = ""  # "http:page" on an http page is a relative link
            else:
                head = "//" + head  # browsers read "http:host/x" as "http://host/x"
        if head.startswith("//"):
            return self._absolute(scheme, head, query, base)
        return self._relative(head, has_query, query, base)

    def with_path_session(self, url: str) -> str | None:
        """canonicalize(url), but with the session state in its path kept (`;jsessionid=`,
        ASP.NET's `/(S(...))/`): the spelling its request goes out as. A server that keeps
        sessions in paths answers the tokenless spelling with a redirect to a new session;
        the linked one it serves (admit.py)."""
        twin = self._keeps_path_sessions
        if twin is None:
            twin = Canonicalizer(self.tracking_params, self.session_params, path_sessions=False)
            self._keeps_path_sessions = twin
        return twin.canonicalize(url)

    def _absolute(self, scheme: str, head: str, query: str, base: str | None) -> str | None:
        if not scheme:  # protocol-relative: take the scheme of the base
            base_parts = self._base_parts(base) if base else None
            if base_parts is None:
                return None
            scheme = base_parts[0]
        # Any number of slashes introduces the authority in http(s) (WHATWG).
        authority, slash, path = head.lstrip("/").partition("/")
        canon_authority = _canon_authority(authority, scheme)
        if canon_authority is None:
            return None
        return self._assemble(scheme, canon_authority, slash + path, query)

    def _relative(self, head: str, has_query: str, query: str, base: str | None) -> str | None:
        base_parts = self._base_parts(base) if base else None
        if base_parts is None:
            return None
        scheme, authority, base_path, base_query = base_parts
        if not head:  # "", "#frag" or "?q": same document (RFC 3986 5.2.2)
            path = base_path
            if not has_query:
                query = base_query
        elif head[0] == "/":
            path = head
        else:
            path = base_path[: base_path.rfind("/") + 1] + head
        return self._assemble(scheme, authority, path, query)

    def _assemble(self, scheme: str, authority: str, path: str, query: str) -> str:
        path = self._canon_path(path)
        if query:
            query = self._canon_query(query)
        if query:
            return f"{scheme}://{authority}{path}?{query}"
        return f"{scheme}://{authority}{path}"

    def _canon_path(self, path: str) -> str:
        if not path:
            return "/"
        if not _PATH_OK(path):
            path = _PATH_FIX.sub(_fix_escape, path)
        if self._strips_path_params:
            if ";" in path:
                path = self._strip_path_params(path)
            if "(" in path:
                path = strip_aspnet_state(path)
        # After decoding, so "%2E%2E" counts as ".." (RFC 3986 6.2.2 order, and browsers).
        if "/." in path:
            path = _remove_dot_segments(path)
        return path

    def _strip_path_params(self, path: str) -> str:
        """Drop ``;jsessionid=...``-style path parameters, keep other matrix params."""
        segments = path.split("/")
        for i, segment in enumerate(segments):
            if ";" in segment:
                first, *params = segment.split(";")
                kept = [p for p in params if not self._drop_path(p.partition("=")[0])]
                segments[i] = ";".join([first, *kept])
        return "/".join(segments)

    def _canon_query(self, query: str) -> str:
        if not _QUERY_OK(query):
            query = _QUERY_FIX.sub(_fix_escape, query)
        params: list[tuple[str, str, str]] = []
        for param in query.split("&"):
            if param:
                key, eq, value = param.partition("=")
                if not self._drop(key):
                    params.append((key, value, eq))
        # Sorting by (key, value) keeps repeated keys; "a" sorts before "a=" deterministically.
        params.sort()
        return "&".join([key + eq + value for key, value, eq in params])

    def _parse_base(self, base: str) -> tuple[str, str, str, str] | None:
        canon = self.canonicalize(base)
        if canon is None:
            return None
        scheme, _, rest = canon.partition("://")
        slash = rest.index("/")  # a canonical URL always has a path
        path, _, query = rest[slash:].partition("?")
        return scheme, rest[:slash], path, query


_DEFAULT_CANONICALIZER = Canonicalizer()


@functools.lru_cache(maxsize=32)
def _canonicalizer_for(tracking: tuple[str, ...], session: tuple[str, ...]) -> Canonicalizer:
    return Canonicalizer(tracking, session)


def canonicalize(
    url: str,
    base: str | None = None,
    *,
    tracking_params: Iterable[str] = DEFAULT_TRACKING_PARAMS,
    session_params: Iterable[str] = DEFAULT_SESSION_PARAMS,
) -> str | None:
    """Canonical form of ``url`` resolved against ``base``; None if it must not be fetched.

    Pass ``()`` as a parameter list to keep those parameters. Hot paths should build a
    :class:`Canonicalizer` once instead of passing custom lists on every call.
    """
    if tracking_params is DEFAULT_TRACKING_PARAMS and session_params is DEFAULT_SESSION_PARAMS:
        return _DEFAULT_CANONICALIZER.canonicalize(url, base)
    canonicalizer = _canonicalizer_for(tuple(tracking_params), tuple(session_params))
    return canonicalizer.canonicalize(url, base)


def base_href(html_base: str | None, page_url: str) -> str:
    """The base to resolve a page's links against.

    A ``<base href>`` may itself be relative (resolved against the page URL). A missing,
    blank or unusable one (``javascript:``, bad host ...) falls back to the page URL.
    """
    if html_base is None or not html_base.strip(_STRIP_CHARS):
        return page_url
    resolved = _DEFAULT_CANONICALIZER.canonicalize(html_base, page_url)
    return page_url if resolved is None else resolved
