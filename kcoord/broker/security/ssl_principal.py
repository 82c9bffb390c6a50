"""The SSL principal: the client certificate's subject DN after `ssl.principal.mapping.rules`.

Kafka's SslPrincipalMapper: a comma-separated list of `DEFAULT` (the DN as is) and
`RULE:pattern/replacement/[LU]` (if the pattern matches the whole DN, the DN with every match
replaced, `$n` back references, optionally lower- or upper-cased). The first rule that matches names
the principal; none matching fails the authentication. The DN is RFC 2253/4514 text, most specific
attribute first (`CN=client,OU=eng,O=acme`), as Java's X500Principal.getName() gives it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cryptography import x509

__all__ = ["NoMatchingRule", "SslPrincipalMapper", "subject_dn"]

# Kafka's RULE_PATTERN and RULE_SPLITTER, in Python's regex dialect (the same here).
_RULE = r"(DEFAULT)|RULE:((\\.|[^\\/])*)/((\\.|[^\\/])*)/([LU]?).*?|(.*?)"
_SPLITTER = re.compile(r"\s*(" + _RULE + r")\s*(,\s*|$)")
_PARSER = re.compile(_RULE)


class NoMatchingRule(ValueError):
    """No rule names this DN: the connection is not authenticated (SslPrincipalMapper.NoMatchingRule)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None = DEFAULT
    replacement: str = ""
    case: str = ""  # "L", "U" or ""

    def apply(self, dn: str) -> str | None:
        if self.pattern is None:
            return dn
        if self.pattern.fullmatch(dn) is None:
            return None
        result = self.pattern.sub(lambda m: _expand(self.replacement, m), dn)
        return result.lower() if self.case == "L" else result.upper() if self.case == "U" else result


def _expand(replacement: str, match: re.Match[str]) -> str:
    """Java's Matcher.appendReplacement: `\\x` is x, `$n` the longest group number that exists; a
    reference past the last group is literal (Kafka's escapeLiteralBackReferences)."""
    out: list[str] = []
    i, groups = 0, match.re.groups
    while i < len(replacement):
        char = replacement[i]
        if char == "\\" and i + 1 < len(replacement):
            out.append(replacement[i + 1])
            i += 2
            continue
        digits = re.match(r"\d+", replacement[i + 1 :]) if char == "$" else None
        if digits is None:
            out.append(char)
            i += 1
            continue
        number = digits.group()
        while len(number) > 1 and int(number) > groups:
            number = number[:-1]
        if int(number) > groups or (number.startswith("0") and int(number) != 0):
            out.append("$")
            i += 1
            continue
        out.append(match.group(int(number)) or "")
        i += 1 + len(number)
    return "".join(out)


class SslPrincipalMapper:
    """Parses the rules once (ValueError on a malformed one, as Kafka's config validation)."""

    def __init__(self, rules: str) -> None:
        self.rules: tuple[_Rule, ...] = tuple(_parse(text) for text in _split(rules or "DEFAULT") if text)

    def name(self, dn: str) -> str:
        for rule in self.rules:
            name = rule.apply(dn)
            if name is not None:
                return name
        raise NoMatchingRule(f"no rule applies to {dn}")


def _split(rules: str) -> list[str]:
    return [match.group(1) for match in _SPLITTER.finditer(rules.strip()) if match.group(1) is not None]


def _parse(rule: str) -> _Rule:
    match = _PARSER.match(rule)
    if match is None or match.end() != len(rule):
        raise ValueError(f"invalid ssl.principal.mapping.rules rule: {rule!r}")
    if match.group(1) is not None:
        return _Rule(None)
    if match.group(2) is None:
        raise ValueError(f"invalid ssl.principal.mapping.rules rule: {rule!r}")
    return _Rule(re.compile(match.group(2)), match.group(4), match.group(6))


def subject_dn(der: bytes) -> str:
    """The subject DN of a DER certificate as RFC 4514 text (most specific attribute first)."""
    return x509.load_der_x509_certificate(der).subject.rfc4514_string()
