"""Kafka's `sasl.jaas.config` value, parsed as data: `<LoginModule> <flag> (<key>=<value>)* ;` repeated.

The grammar is Kafka's JaasConfig (clients/.../common/security/JaasConfig.java, a java.io.StreamTokenizer
with `//` and `/* */` comments and `-`, `_`, `$` as word characters): a value is a word or a quoted
string; a bare number is not a value ("Value not specified for key"). Nothing named in the string is
ever loaded or run: the login module's class name only selects one of the three mechanisms the tools
implement (CVE-2023-25194 was a JAAS string naming a class the client then instantiated).
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["JaasError", "LoginModule", "parse_jaas"]

_FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "a": "\a", "v": "\v"}


class JaasError(ValueError):
    """A malformed sasl.jaas.config, with Kafka's message where Kafka has one."""


@dataclass(frozen=True, slots=True)
class LoginModule:
    name: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Token:
    kind: str  # "word", "quoted", "number" or the one character itself ("=", ";", ...)
    text: str


def _is_word_start(ch: str) -> bool:
    return (ch.isascii() and ch.isalpha()) or ch in "-_$" or ord(ch) >= 160


def _is_word_part(ch: str) -> bool:
    return _is_word_start(ch) or ch.isdigit() or ch == "."


def _skip_comment(text: str, i: int) -> int:
    """The index after a `//` or `/* */` comment starting at i, or i when none starts there."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        return len(text) if end < 0 else end + 1
    if text.startswith("/*", i):
        end = text.find("*/", i + 2)
        return len(text) if end < 0 else end + 2
    return i


def _quoted(text: str, i: int) -> tuple[str, int]:
    """A quoted string starting at text[i] (the quote); StreamTokenizer ends it at the closing quote
    or at the end of the line, and decodes backslash escapes."""
    quote, out, i = text[i], [], i + 1
    while i < len(text) and text[i] != quote and text[i] != "\n":
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            i += 1
            ch = _ESCAPES.get(text[i], text[i])
        out.append(ch)
        i += 1
    return "".join(out), i + 1


def _tokens(text: str) -> list[_Token]:
    tokens, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch.isspace() or ord(ch) < 32:
            i += 1
        elif (after := _skip_comment(text, i)) != i:
            i = after
        elif ch in "\"'":
            value, i = _quoted(text, i)
            tokens.append(_Token("quoted", value))
        elif ch.isdigit() or ch == ".":
            start = i
            while i < len(text) and (text[i].isdigit() or text[i] == "."):
                i += 1
            tokens.append(_Token("number", text[start:i]))
        elif _is_word_start(ch):
            start = i
            while i < len(text) and _is_word_part(text[i]):
                i += 1
            tokens.append(_Token("word", text[start:i]))
        else:
            tokens.append(_Token(ch, ch))
            i += 1
    return tokens


def _value(token: _Token | None) -> str | None:
    return token.text if token is not None and token.kind in ("word", "quoted") else None


def _entry(tokens: list[_Token], i: int) -> tuple[LoginModule, int]:
    name = tokens[i].text
    if i + 1 >= len(tokens):
        raise JaasError("Login module control flag not specified in JAAS config")
    flag = tokens[i + 1].text
    if flag.upper() not in _FLAGS:
        raise JaasError(f"Invalid login module control flag '{flag}' in JAAS config")
    options: dict[str, str] = {}
    i += 2
    while i < len(tokens) and tokens[i].kind != ";":
        key = tokens[i].text
        value = _value(tokens[i + 2]) if i + 2 < len(tokens) else None
        if i + 1 >= len(tokens) or tokens[i + 1].kind != "=" or value is None:
            raise JaasError(f"Value not specified for key '{key}' in JAAS config")
        options[key] = value
        i += 3
    if i >= len(tokens):
        raise JaasError("JAAS config entry not terminated by semi-colon")
    return LoginModule(name, flag.upper(), options), i + 1


def parse_jaas(text: str) -> list[LoginModule]:
    """Every login module entry of a sasl.jaas.config value; JaasError when it is malformed."""
    tokens = _tokens(text)
    modules, i = [], 0
    while i < len(tokens):
        module, i = _entry(tokens, i)
        modules.append(module)
    if not modules:
        raise JaasError("Login module not specified in JAAS config")
    return modules
