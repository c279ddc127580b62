"""Who a connection is: Kafka's ``DefaultKafkaPrincipalBuilder`` for each security protocol.

- PLAINTEXT, or SSL without a client certificate: ``User:ANONYMOUS``.
- SASL_*: ``User:<authorization id>`` of the SASL exchange.
- SSL with a client certificate: ``User:<name>``, where name is the certificate subject's
  distinguished name as Java prints it (``X500Principal.getName()``, RFC 2253: most specific
  RDN first, ``CN=alice,OU=eng,O=acme,C=US``) after ``ssl.principal.mapping.rules``.

``ssl.principal.mapping.rules`` (KIP-371): a comma-separated list of ``DEFAULT`` (the DN as
is) and ``RULE:pattern/replacement/[L|U]``; the first rule whose (Java) regex matches the
whole DN gives the name, the replacement using Java's ``$1`` syntax, optionally lower- or
upper-cased. No rule matching is an authentication failure, as in Kafka.
"""
from __future__ import annotations

import re

ANONYMOUS = "User:ANONYMOUS"

# Java's RFC 2253 keywords (sun.security.x509.AVAKeyword, rfc2253Compliant); others print as
# the dotted OID with the value's DER in hex.
_RFC2253_KEYWORDS = {
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O", "2.5.4.11": "OU",
    "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}
# DER string types Java prints as text (AVA.isDerString, non-canonical)
_TEXT_TAGS = {19, 20, 22, 27, 30, 12}
_ESCAPEES = ',=+<>#;"\\'


def _der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(body)]) + body


def _value_bytes(tag: int, value: str) -> bytes:
    if tag == 30:
        return value.encode("utf-16-be")
    if tag == 28:
        return value.encode("utf-32-be")
    return value.encode("utf-8")


def _ava(attr) -> str:
    oid = attr.oid.dotted_string
    tag = getattr(getattr(attr, "_type", None), "value", 12)
    keyword = _RFC2253_KEYWORDS.get(oid)
    value = attr.value
    if keyword is None or tag not in _TEXT_TAGS or not isinstance(value, str):
        raw = value if isinstance(value, bytes) else _value_bytes(tag, value)
        return f"{oid}=#{bytes([tag]).hex()}{_der_length(len(raw)).hex()}{raw.hex()}"
    out = []
    for ch in value:
        if ch in _ESCAPEES:
            out.append("\\" + ch)
        elif ch == "\0":
            out.append("\\00")
        else:
            out.append(ch)
    s = "".join(out)
    lead = len(s) - len(s.lstrip(" \r"))
    trail = len(s) - len(s.rstrip(" \r"))
    if lead or trail:
        s = "".join(("\\" + c) if i < lead or i >= len(s) - trail else c for i, c in enumerate(s))
    return f"{keyword}={s}"


def rfc2253(name) -> str:
    """A ``cryptography.x509.Name`` as Java's ``X500Principal.getName()`` prints it."""
    return ",".join("+".join(_ava(a) for a in rdn) for rdn in reversed(list(name.rdns)))


def certificate_dn(der: bytes) -> str:
    from cryptography import x509
    return rfc2253(x509.load_der_x509_certificate(der).subject)


# ---- ssl.principal.mapping.rules -------------------------------------------------------------------
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRule(ValueError):
    pass


def _java_regex(pattern: str) -> re.Pattern:
    # Java's named groups; the rest of the syntax used in mapping rules is shared
    return re.compile(re.sub(r"\(\?<([A-Za-z][A-Za-z0-9]*)>", r"(?P<\1>", pattern))


def _expand_java(repl: str, m: re.Match) -> str:
    """Java's ``Matcher.appendReplacement`` syntax: ``$n``, ``${name}``, ``\\x`` literal."""
    out, i, groups = [], 0, m.re.groups
    while i < len(repl):
        c = repl[i]
        if c == "\\":
            if i + 1 >= len(repl):
                raise ValueError("character to be escaped is missing")
            out.append(repl[i + 1])
            i += 2
        elif c == "$":
            i += 1
            if i < len(repl) and repl[i] == "{":
                j = repl.index("}", i)
                out.append(m.group(repl[i + 1:j]) or "")
                i = j + 1
                continue
            if i >= len(repl) or not repl[i].isdigit():
                raise ValueError("Illegal group reference")
            num = int(repl[i])
            i += 1
            while i < len(repl) and repl[i].isdigit() and num * 10 + int(repl[i]) <= groups:
                num = num * 10 + int(repl[i])
                i += 1
            if num > groups:
                raise ValueError(f"No group {num}")
            out.append(m.group(num) or "")
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _escape_literal_back_references(repl: str, groups: int) -> str:
    """Kafka's (from NiFi): ``$n`` beyond the group count stays a literal ``$n``."""
    if groups == 0:
        return repl
    out, last = [], 0
    for m in re.finditer(r"\$(\d+)", repl):
        num = m.group(1)
        if num.startswith("0"):
            continue
        idx = int(num)
        while idx > groups and idx >= 10:
            idx //= 10
        if idx > groups:
            out.append(repl[last:m.start()] + "\\")
            last = m.start()
    out.append(repl[last:])
    return "".join(out)


class _Rule:
    def __init__(self, pattern: str | None = None, replacement: str | None = None, lower=False, upper=False):
        self.default = pattern is None
        self.source = pattern
        self.pattern = None if pattern is None else _java_regex(pattern)
        self.replacement = replacement
        self.lower, self.upper = lower, upper

    def apply(self, dn: str) -> str | None:
        if self.default:
            return dn
        if not self.pattern.fullmatch(dn):
            return None
        repl = _escape_literal_back_references(self.replacement, self.pattern.groups)
        result = self.pattern.sub(lambda m: _expand_java(repl, m), dn)
        if self.lower:
            return result.lower()
        if self.upper:
            return result.upper()
        return result

    def __repr__(self) -> str:
        if self.default:
            return "DEFAULT"
        return f"RULE:{self.source}/{self.replacement}" + ("/L" if self.lower else "/U" if self.upper else "")


class SslPrincipalMapper:
    def __init__(self, rules: str | None = "DEFAULT"):
        text = ("DEFAULT" if rules is None else rules).strip()
        self.rules: list[_Rule] = []
        for m in _SPLITTER.finditer(text):
            rule = m.group(1)
            p = _PARSER.match(rule)
            if p is None:
                raise ValueError(f"Invalid rule: {rule}")
            if p.end() != len(rule):
                raise ValueError(f"Invalid rule: `{rule}`, unmatched substring: `{rule[p.end():]}`")
            if p.group(1) is not None:
                self.rules.append(_Rule())
            elif p.group(2) is not None:
                try:
                    self.rules.append(_Rule(p.group(2), p.group(4), p.group(6) == "L", p.group(6) == "U"))
                except re.error as exc:
                    raise ValueError(f"Invalid rule: {rule}: {exc}") from None

    def name(self, dn: str) -> str:
        for r in self.rules:
            out = r.apply(dn)
            if out is not None:
                return out
        raise NoMatchingRule(f"No rules apply to {dn}, rules {self.rules}")
