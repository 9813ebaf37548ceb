"""The extension functions DRA's CEL environment has beyond CEL's own, run on cel-python's values.

v1.35 compiles selectors in Kubernetes' base environment (environment.MustBaseEnvSet, as it
stood at 1.34, the compatibility version of a 1.35 API server) with cel.bind on top. That base
loads cel-go's strings (version 2), sets and lists (version 3) extensions and optional types, and
Kubernetes' lists, regex, IP, CIDR, URL, format, quantity and semver libraries; not cel-go's math
extension nor its encoders, so `math.greatest` and `base64.decode` are undeclared there. cel-python
has none of them: they are here (quantities, semantic versions and string.format in cel.py and
celformat), keyed as cel-python looks a function up: by name for a method or a global function,
by `namespace.name` for a namespaced one (`sets.contains`, `format.dns1123Label`), which
`namespaced` rewrites a call into, as cel-go resolves `sets.contains(...)` to one function.

A wrong argument at run time (a type the checker let through as dyn) is a TypeError, which
cel-python reports as "no such overload", as cel-go does; any other error is a LibraryError with
the library's own words.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import json
import re
import urllib.parse
from collections.abc import Callable
from typing import Any

import lark
from celpy import celtypes

from kubesched.api.names import dns_1035_label_errors, dns_label_errors, dns_subdomain_errors
from kubesched.api.validation.checker import label_value_errors, qualified_name_errors

NAMESPACES = frozenset({"sets", "strings", "lists", "ip", "optional", "format"})


class LibraryError(ValueError):
    """A library function's error at run time, told with its own message (cel-python words any
    other ValueError as cel-go words an overflow)."""


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return int(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return value


# ---- cel-go's strings extension ------------------------------------------------------------------

def _substring(s: Any, start: Any, end: Any = None) -> celtypes.StringType:
    text, begin = _str(s), _int(start)
    stop = len(text) if end is None else _int(end)
    if begin < 0 or begin > len(text):
        raise LibraryError(f"index out of range: {begin}")
    if stop < 0 or stop > len(text):
        raise LibraryError(f"index out of range: {stop}")
    if begin > stop:
        raise LibraryError(f"invalid substring range. start: {begin}, end: {stop}")
    return celtypes.StringType(text[begin:stop])


def _replace(s: Any, old: Any, new: Any, n: Any = None) -> celtypes.StringType:
    count = -1 if n is None else _int(n)
    return celtypes.StringType(_str(s).replace(_str(old), _str(new), count if count >= 0 else -1))


def _split(s: Any, sep: Any, n: Any = None) -> celtypes.ListType:
    text, separator = _str(s), _str(sep)
    limit = -1 if n is None else _int(n)
    if limit == 0:
        return celtypes.ListType([])
    if separator == "":  # Go's strings.SplitN with an empty separator: one code point per part
        parts = list(text) if limit < 0 or limit >= len(text) else [*text[:limit - 1], text[limit - 1:]]
    else:
        parts = text.split(separator, limit - 1 if limit > 0 else -1)
    return celtypes.ListType([celtypes.StringType(p) for p in parts])


def _join(items: Any, sep: Any = "") -> celtypes.StringType:
    return celtypes.StringType(_str(sep).join(_str(i) for i in _list(items)))


def _char_at(s: Any, index: Any) -> celtypes.StringType:
    text, i = _str(s), _int(index)
    if i < 0 or i > len(text):
        raise LibraryError(f"index out of range: {i}")
    return celtypes.StringType(text[i:i + 1])


def _index_of(target: Any, item: Any, start: Any = None) -> celtypes.IntType:
    if isinstance(target, list):  # Kubernetes' lists library
        for i, value in enumerate(target):
            if value == item:
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    text, sub = _str(target), _str(item)
    begin = 0 if start is None else _int(start)
    if begin < 0 or begin > len(text):
        raise LibraryError(f"index out of range: {begin}")
    return celtypes.IntType(text.find(sub, begin))


def _last_index_of(target: Any, item: Any, start: Any = None) -> celtypes.IntType:
    if isinstance(target, list):
        for i in range(len(target) - 1, -1, -1):
            if target[i] == item:
                return celtypes.IntType(i)
        return celtypes.IntType(-1)
    text, sub = _str(target), _str(item)
    end = len(text) if start is None else _int(start)
    if end < 0 or end > len(text):
        raise LibraryError(f"index out of range: {end}")
    return celtypes.IntType(text.rfind(sub, 0, end + len(sub)))


def _ascii(convert: Callable[[str], str]) -> Callable[[Any], celtypes.StringType]:
    """lowerAscii / upperAscii change only ASCII letters, as cel-go's do."""
    def run(s: Any) -> celtypes.StringType:
        return celtypes.StringType("".join(convert(c) if c.isascii() else c for c in _str(s)))
    return run


def _trim(s: Any) -> celtypes.StringType:
    return celtypes.StringType(_str(s).strip())  # Go's strings.TrimSpace: Unicode white space


def _quote(s: Any) -> celtypes.StringType:
    out = ['"']
    for c in _str(s):
        out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                    "\v": "\\v", "\\": "\\\\", '"': '\\"'}.get(c, c))
    out.append('"')
    return celtypes.StringType("".join(out))


# ---- Kubernetes' regex library -------------------------------------------------------------------

def _find(s: Any, pattern: Any) -> celtypes.StringType:
    found = _compile(pattern).search(_str(s))
    return celtypes.StringType(found.group(0) if found else "")


def _find_all(s: Any, pattern: Any, n: Any = None) -> celtypes.ListType:
    limit = -1 if n is None else _int(n)
    found = [celtypes.StringType(m.group(0)) for m in _compile(pattern).finditer(_str(s))]
    return celtypes.ListType(found if limit < 0 else found[:limit])


def _compile(pattern: Any) -> re.Pattern[str]:
    try:
        return re.compile(_str(pattern))
    except re.error as e:
        raise LibraryError(f"error parsing regexp: {e}") from None


# ---- Kubernetes' lists library -------------------------------------------------------------------

def _is_sorted(items: Any) -> celtypes.BoolType:
    values = _list(items)
    return celtypes.BoolType(all(values[i] <= values[i + 1] for i in range(len(values) - 1)))


def _sum(items: Any) -> Any:
    values = _list(items)
    if not values:
        return celtypes.IntType(0)
    total = values[0]
    for value in values[1:]:
        total = total + value
    return total


def _max(items: Any) -> Any:
    values = _list(items)
    if not values:
        raise LibraryError("max called on empty list")
    return max(values)


def _slice(items: Any, start: Any, end: Any) -> celtypes.ListType:
    values, begin, stop = _list(items), _int(start), _int(end)
    if begin < 0 or stop < 0:
        raise LibraryError(f"cannot slice({begin}, {stop}), negative indexes not supported")
    if begin > stop:
        raise LibraryError(f"cannot slice({begin}, {stop}), start index must be less than or equal to end index")
    if stop > len(values):
        raise LibraryError(f"cannot slice({begin}, {stop}), list is length {len(values)}")
    return celtypes.ListType(values[begin:stop])


def _flatten(items: Any, depth: Any = 1) -> celtypes.ListType:
    levels = _int(depth)
    if levels < 0:
        raise LibraryError("level must be non-negative")

    def flat(values: list[Any], left: int) -> list[Any]:
        out: list[Any] = []
        for value in values:
            if isinstance(value, list) and left > 0:
                out.extend(flat(value, left - 1))
            else:
                out.append(value)
        return out
    return celtypes.ListType(flat(_list(items), levels))


def _distinct(items: Any) -> celtypes.ListType:
    out: list[Any] = []
    for value in _list(items):
        if value not in out:
            out.append(value)
    return celtypes.ListType(out)


def _sort(items: Any) -> celtypes.ListType:
    return celtypes.ListType(sorted(_list(items)))


def _reverse(items: Any) -> celtypes.ListType:
    return celtypes.ListType(list(reversed(_list(items))))


def _range(n: Any) -> celtypes.ListType:
    return celtypes.ListType([celtypes.IntType(i) for i in range(_int(n))])


# ---- cel-go's sets extension ---------------------------------------------------------------------

def _contains(a: Any, b: Any) -> celtypes.BoolType:
    values = _list(a)
    return celtypes.BoolType(all(x in values for x in _list(b)))


def _equivalent(a: Any, b: Any) -> celtypes.BoolType:
    return celtypes.BoolType(bool(_contains(a, b)) and bool(_contains(b, a)))


def _intersects(a: Any, b: Any) -> celtypes.BoolType:
    values = _list(a)
    return celtypes.BoolType(any(x in values for x in _list(b)))


# ---- Kubernetes' IP and CIDR libraries -----------------------------------------------------------

_Addr = ipaddress.IPv4Address | ipaddress.IPv6Address


class IP:
    """A `net.IP`: an address as Go's netip.Addr holds it (no zone, no IPv4-mapped IPv6)."""

    def __init__(self, addr: _Addr) -> None:
        self.addr = addr

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IP) and self.addr == other.addr

    def __hash__(self) -> int:
        return hash(self.addr)

    def __str__(self) -> str:  # string(ip): the canonical form
        return str(self.addr)


class CIDR:
    """A `net.CIDR`: an address and a prefix length, the address kept unmasked as netip.Prefix
    keeps it (`cidr('10.0.0.1/8').ip()` is 10.0.0.1; `masked()` clears the host bits)."""

    def __init__(self, addr: _Addr, bits: int) -> None:
        self.addr, self.bits = addr, bits

    @property
    def network(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.addr}/{self.bits}", strict=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CIDR) and (self.addr, self.bits) == (other.addr, other.bits)

    def __hash__(self) -> int:
        return hash((self.addr, self.bits))

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"


def _parse_addr(text: str) -> _Addr:
    """netip.ParseAddr as the IP library restricts it: no zone, no IPv4-mapped IPv6 address."""
    if "%" in text:
        raise LibraryError("IP address with zone value is not allowed")
    addr = ipaddress.ip_address(text)  # refuses IPv4 octets with leading zeros, as Go does
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise LibraryError("IPv4-mapped IPv6 address is not allowed")
    return addr


def _parse_cidr(text: str) -> CIDR:
    address, slash, bits = text.partition("/")
    if not slash or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        raise LibraryError(f"netip.ParsePrefix({text!r}): bad bits after slash: {bits!r}")
    addr = _parse_addr(address)
    if int(bits) > addr.max_prefixlen:
        raise LibraryError(f"netip.ParsePrefix({text!r}): prefix length out of range")
    return CIDR(addr, int(bits))


def _ip(value: Any) -> IP:
    """ip(string), or a CIDR's address (`cidr.ip()`)."""
    if isinstance(value, CIDR):
        return IP(value.addr)
    text = _str(value)
    try:
        return IP(_parse_addr(text))
    except ValueError as e:
        raise LibraryError(f"IP Address {text!r} parse error during conversion from string: {e}") from None


def _cidr(value: Any) -> CIDR:
    text = _str(value)
    try:
        return _parse_cidr(text)
    except ValueError as e:
        raise LibraryError(f"network address parse error during conversion from string: {e}") from None


def valid(parse: Callable[..., Any], error: type[Exception] = ValueError) -> Callable[..., celtypes.BoolType]:
    """The libraries' is* tests (isIP, isCIDR, isQuantity, isSemver): whether `parse` takes the
    arguments, its `error` never raised."""
    def run(*args: Any) -> celtypes.BoolType:
        try:
            parse(*args)
        except error:
            return celtypes.BoolType(False)
        return celtypes.BoolType(True)
    return run


def _is_canonical(value: Any) -> celtypes.BoolType:
    text = _str(value)
    try:
        return celtypes.BoolType(str(_parse_addr(text)) == text)
    except ValueError as e:
        raise LibraryError(f"IP Address {text!r} parse error during conversion from string: {e}") from None


def _addr_of(value: Any) -> _Addr:
    if not isinstance(value, IP):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return value.addr


def _link_local_multicast(a: _Addr) -> bool:
    """Go's IsLinkLocalMulticast: 224.0.0.0/24, or ff02::/16 with any flags (ffX2::)."""
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("224.0.0.0/24")
    return (int(a) >> 112) & 0xFF0F == 0xFF02


def _global_unicast(a: _Addr) -> bool:
    """Go's IsGlobalUnicast: any address that is not unspecified, loopback, multicast,
    link-local unicast or the IPv4 broadcast address (private ranges included)."""
    if a.is_unspecified or a.is_loopback or a.is_multicast or _link_local_unicast(a):
        return False
    return a != ipaddress.IPv4Address("255.255.255.255")


def _link_local_unicast(a: _Addr) -> bool:
    if isinstance(a, ipaddress.IPv4Address):
        return a in ipaddress.IPv4Network("169.254.0.0/16")
    return a in ipaddress.IPv6Network("fe80::/10")


def _ip_test(test: Callable[[_Addr], bool]) -> Callable[[Any], celtypes.BoolType]:
    return lambda value: celtypes.BoolType(test(_addr_of(value)))


def _cidr_of(value: Any) -> CIDR:
    if not isinstance(value, CIDR):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return value


def _contains_ip(cidr: Any, other: Any) -> celtypes.BoolType:
    prefix = _cidr_of(cidr)
    addr = other.addr if isinstance(other, IP) else _ip(other).addr
    return celtypes.BoolType(addr.version == prefix.addr.version and addr in prefix.network)


def _contains_cidr(cidr: Any, other: Any) -> celtypes.BoolType:
    """Whether every address of `other` is in `cidr`: same family, a prefix at least as long,
    and `other`'s address inside `cidr`'s network."""
    prefix = _cidr_of(cidr)
    inner = other if isinstance(other, CIDR) else _cidr(other)
    if inner.addr.version != prefix.addr.version or inner.bits < prefix.bits:
        return celtypes.BoolType(False)
    return celtypes.BoolType(inner.addr in prefix.network)


def _masked(value: Any) -> CIDR:
    prefix = _cidr_of(value)
    return CIDR(prefix.network.network_address, prefix.bits)

# ---- Kubernetes' URL library ---------------------------------------------------------------------

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")
_PATH_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~$&+,/:;=@")
_ESCAPED_PATH_OK = _PATH_SAFE | frozenset("!'()*[]%")


class URL:
    """A `kubernetes.URL`: a URL as Go's url.Parse splits it, after url.ParseRequestURI accepted
    the text (an absolute URL, or an absolute path)."""

    def __init__(self, text: str) -> None:
        self.text = text
        rest, _, self.fragment = text.partition("#")
        self.scheme = ""
        if (m := _SCHEME.match(rest)) and rest[m.end():m.end() + 1] == ":":
            self.scheme, rest = m.group(0).lower(), rest[m.end() + 1:]
        rest, _, self.raw_query = rest.partition("?")
        self.host = ""
        if rest.startswith("//") and self.scheme:
            authority, slash, path = rest[2:].partition("/")
            self.host, rest = authority.rpartition("@")[2], slash + path
        self.raw_path = rest

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URL) and self.text == other.text

    def __hash__(self) -> int:
        return hash(self.text)

    def hostname(self) -> str:
        host = self.host
        if host.startswith("["):
            return host[1:host.find("]")] if "]" in host else host[1:]
        return host.rpartition(":")[0] if ":" in host else host

    def port(self) -> str:
        host = self.host.rpartition("]")[2] if self.host.startswith("[") else self.host
        return host.rpartition(":")[2] if ":" in host else ""

    def escaped_path(self) -> str:
        """Go's EscapedPath: the path as written when that is a valid encoding, else re-escaped."""
        if all(c in _ESCAPED_PATH_OK for c in self.raw_path):
            return self.raw_path
        return "".join(c if c in _PATH_SAFE else "".join(f"%{b:02X}" for b in c.encode())
                       for c in urllib.parse.unquote(self.raw_path))


def _request_uri_error(text: str) -> str | None:
    """Why Go's url.ParseRequestURI refuses `text`, in its words, or None."""
    quoted = json.dumps(text)
    if text == "":
        return f"parse {quoted}: empty url"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in text):
        return f"parse {quoted}: net/url: invalid control character in URL"
    if text.startswith(":"):
        return f"parse {quoted}: missing protocol scheme"
    if text == "*":
        return None
    m = _SCHEME.match(text)
    rest = text[m.end() + 1:] if m and text[m.end():m.end() + 1] == ":" else text
    if not (m and rest is not text) and not rest.startswith("/"):
        return f"parse {quoted}: invalid URI for request"
    if bad := re.search(r"%(?![0-9A-Fa-f]{2})(.{0,2})", rest.partition("?")[0]):
        return f"parse {quoted}: invalid URL escape {json.dumps('%' + bad.group(1))}"
    if rest is not text and rest.startswith("//"):
        host = rest[2:].partition("/")[0].partition("?")[0].rpartition("@")[2]
        port = host.rpartition("]")[2] if host.startswith("[") else host
        if ":" in port and not port.rpartition(":")[2].isdigit() and port.rpartition(":")[2]:
            return f"parse {quoted}: invalid port {json.dumps(':' + port.rpartition(':')[2])} after host"
    return None


def _url(value: Any) -> URL:
    text = _str(value)
    if (why := _request_uri_error(text)) is not None:
        raise LibraryError(f"URL parse error during conversion from string: {why}")
    return URL(text)


def _url_of(value: Any) -> URL:
    if not isinstance(value, URL):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return value


def _get_query(value: Any) -> celtypes.MapType:
    query: dict[str, list[str]] = {}
    for key, item in urllib.parse.parse_qsl(_url_of(value).raw_query, keep_blank_values=True):
        query.setdefault(key, []).append(item)
    return celtypes.MapType({celtypes.StringType(k): celtypes.ListType([celtypes.StringType(v) for v in vs])
                             for k, vs in query.items()})


# ---- cel-go's optional types ---------------------------------------------------------------------

class Optional:
    """An `optional_type(T)`: a value, or none."""

    def __init__(self, value: Any = None, present: bool = False) -> None:
        self.value, self.present = value, present

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Optional) and (self.present, self.value) == (other.present, other.value)

    def __hash__(self) -> int:
        return hash((self.present, self.value))


NONE = Optional()


def _opt(value: Any) -> Optional:
    if not isinstance(value, Optional):
        raise TypeError(f"no such overload for {type(value).__name__}")
    return value


def _of_non_zero(value: Any) -> Optional:
    """optional.ofNonZeroValue: none for a type's zero value (0, '', false, null, empty list or map)."""
    zero = value is None or (not isinstance(value, (Optional, URL, Format)) and not value)
    return NONE if zero else Optional(value, True)


def _value(value: Any) -> Any:
    opt = _opt(value)
    if not opt.present:
        raise LibraryError("optional.none() dereference")
    return opt.value


# ---- Kubernetes' format library ------------------------------------------------------------------

class Format:
    """A `kubernetes.NamedFormat`: a format string values are checked against."""

    def __init__(self, name: str, check: Callable[[str], list[str]], max_regex_size: int) -> None:
        self.name, self.check = name, check
        self.max_regex_size = max_regex_size  # what a run of validate is charged for its pattern

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Format) and self.name == other.name

    def __hash__(self) -> int:
        return hash(self.name)


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """apimachinery's NameIs*(name, prefix=true): a generateName prefix may end with '-'."""
    return lambda s: check(s[:-1] + "a" if s.endswith("-") else s)


def _uri_errors(s: str) -> list[str]:
    why = _request_uri_error(s)
    return [] if why is None else [why]


_UUID = re.compile(r"(?i)^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$")
_DATE = re.compile(r"^(\d{4})-(\d{2})-(\d{2})$")
# strfmt's date-time layouts: RFC 3339 (any fraction of a second), a local time without an
# offset, and a time without seconds, with Z or nothing after it.
_DATETIME = re.compile(r"^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?|Z?)$")


# strfmt's DateTimePattern, whose length the date and datetime formats are charged for.
_STRFMT_DATETIME = r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$"


def _is_date(s: str) -> bool:
    m = _DATE.match(s)
    if m is None:
        return False
    try:
        datetime.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def _is_datetime(s: str) -> bool:
    m = _DATETIME.match(s)
    return m is not None and _is_date(m[1]) and int(m[2]) < 24 and int(m[3]) < 60 and int(m[4] or 0) < 60


def _is_base64(s: str) -> bool:
    try:
        base64.b64decode(s.replace("\r", "").replace("\n", ""), validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _formats() -> dict[str, Format]:
    """Kubernetes' named formats with the pattern size each run is charged for; uri, uuid and
    byte are charged as the longest name pattern the estimate assumes (128), not their validator's
    own pattern's length."""
    checks: dict[str, tuple[str, Callable[[str], list[str]], int]] = {
        "dns1123Label": ("DNS1123Label", dns_label_errors, 30),
        "dns1123Subdomain": ("DNS1123Subdomain", dns_subdomain_errors, 60),
        "dns1035Label": ("DNS1035Label", dns_1035_label_errors, 30),
        "qualifiedName": ("QualifiedName", qualified_name_errors, 60),
        "dns1123LabelPrefix": ("DNS1123LabelPrefix", _prefix(dns_label_errors), 30),
        "dns1123SubdomainPrefix": ("DNS1123SubdomainPrefix", _prefix(dns_subdomain_errors), 60),
        "dns1035LabelPrefix": ("DNS1035LabelPrefix", _prefix(dns_1035_label_errors), 30),
        "labelValue": ("LabelValue", label_value_errors, 40),
        "uri": ("URI", _uri_errors, 128),
        "uuid": ("uuid", lambda s: [] if _UUID.match(s) else ["does not match the UUID format"], 128),
        "byte": ("byte", lambda s: [] if _is_base64(s) else ["invalid base64"], 128),
        "date": ("date", lambda s: [] if _is_date(s) else ["invalid date"], len(_STRFMT_DATETIME)),
        "datetime": ("datetime", lambda s: [] if _is_datetime(s) else ["invalid datetime"], len(_STRFMT_DATETIME)),
    }
    return {key: Format(name, check, size) for key, (name, check, size) in checks.items()}


FORMATS = _formats()


def _validate(fmt: Any, value: Any) -> Optional:
    if not isinstance(fmt, Format):
        raise TypeError(f"no such overload for {type(fmt).__name__}")
    problems = fmt.check(_str(value))
    if not problems:
        return NONE
    return Optional(celtypes.ListType([celtypes.StringType(p) for p in problems]), True)


def _named(name: Any) -> Optional:
    found = FORMATS.get(_str(name))
    return NONE if found is None else Optional(found, True)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "lowerAscii": _ascii(str.lower), "upperAscii": _ascii(str.upper), "trim": _trim,
    "substring": _substring, "replace": _replace, "split": _split, "join": _join, "charAt": _char_at,
    "indexOf": _index_of, "lastIndexOf": _last_index_of, "strings.quote": _quote,
    "find": _find, "findAll": _find_all,
    "isSorted": _is_sorted, "sum": _sum, "max": _max, "slice": _slice, "flatten": _flatten,
    "distinct": _distinct, "sort": _sort, "reverse": _reverse, "lists.range": _range,
    "sets.contains": _contains, "sets.equivalent": _equivalent, "sets.intersects": _intersects,
    "ip": _ip, "isIP": valid(lambda v: _parse_addr(_str(v))), "ip.isCanonical": _is_canonical,
    "family": lambda v: celtypes.IntType(_addr_of(v).version),
    "isUnspecified": _ip_test(lambda a: a.is_unspecified), "isLoopback": _ip_test(lambda a: a.is_loopback),
    "isLinkLocalMulticast": _ip_test(_link_local_multicast), "isLinkLocalUnicast": _ip_test(_link_local_unicast),
    "isGlobalUnicast": _ip_test(_global_unicast),
    "cidr": _cidr, "isCIDR": valid(lambda v: _parse_cidr(_str(v))), "containsIP": _contains_ip, "containsCIDR": _contains_cidr,
    "masked": _masked, "prefixLength": lambda v: celtypes.IntType(_cidr_of(v).bits),
    "url": _url, "isURL": lambda v: celtypes.BoolType(_request_uri_error(_str(v)) is None),
    "getScheme": lambda v: celtypes.StringType(_url_of(v).scheme),
    "getHost": lambda v: celtypes.StringType(_url_of(v).host),
    "getHostname": lambda v: celtypes.StringType(_url_of(v).hostname()),
    "getPort": lambda v: celtypes.StringType(_url_of(v).port()),
    "getEscapedPath": lambda v: celtypes.StringType(_url_of(v).escaped_path()),
    "getQuery": _get_query,
    "optional.of": lambda v: Optional(v, True), "optional.ofNonZeroValue": _of_non_zero,
    "optional.none": lambda: NONE, "hasValue": lambda v: celtypes.BoolType(_opt(v).present), "value": _value,
    "or": lambda a, b: _opt(a) if _opt(a).present else _opt(b),
    "orValue": lambda a, b: _opt(a).value if _opt(a).present else b,
    "validate": _validate, "format.named": _named,
    **{f"format.{key}": (lambda f=f: f) for key, f in FORMATS.items()},
}


def namespaced(tree: lark.Tree) -> None:
    """`sets.contains(a, b)` as one call of the function `sets.contains`: cel-python would read
    `sets` as a variable. Rewritten in place, bottom-up."""
    for node in tree.iter_subtrees():
        if node.data != "member" or len(node.children) != 1:
            continue
        call = node.children[0]
        if not (isinstance(call, lark.Tree) and call.data == "member_dot_arg"):
            continue
        target, method = call.children[0], call.children[1]
        namespace = _plain_ident(target)
        if namespace not in NAMESPACES or f"{namespace}.{method}" not in FUNCTIONS:
            continue
        token = lark.Token("IDENT", f"{namespace}.{method}")
        args = call.children[2:] if len(call.children) > 2 else []
        node.children = [lark.Tree("primary", [lark.Tree("ident_arg", [token, *args])])]


def _plain_ident(node: Any) -> str | None:
    while isinstance(node, lark.Tree) and len(node.children) == 1 and node.data in ("member", "primary"):
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    return None
