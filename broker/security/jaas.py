"""Kafka's ``sasl.jaas.config`` syntax (``org.apache.kafka.common.security.JaasConfig``).

    <LoginModuleClass> <ControlFlag> [<option>=<value>]* ;

Control flags: required, requisite, sufficient, optional (any case). Values are words or
quoted strings (double or single quotes, backslash escapes); ``//`` and ``/* */`` comments
are skipped. As in Kafka (a ``StreamTokenizer`` that parses numbers), an unquoted value that
starts with a digit is not a word: quote it. A broker's per-listener, per-mechanism property
(``listener.name.<l>.<mechanism>.sasl.jaas.config``) holds exactly one login module.

Option values are secrets (``user_alice="..."``): errors name keys, never values.
"""
from __future__ import annotations

from typing import NamedTuple

FLAGS = ("REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL")
_PUNCT = "=;"
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


class JaasError(ValueError):
    pass


class LoginModule(NamedTuple):
    class_name: str
    flag: str
    options: dict[str, str]


def _tokens(text: str):
    """(kind, value) with kind 'word', 'quoted', 'number' or a punctuation character."""
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
        elif c in "\"'":
            out, i = [], i + 1
            while i < n and text[i] != c:
                if text[i] == "\\" and i + 1 < n:
                    i += 1
                    out.append(_ESCAPES.get(text[i], text[i]))
                else:
                    out.append(text[i])
                i += 1
            yield "quoted", "".join(out)
            i += 1
        elif c in _PUNCT:
            yield c, c
            i += 1
        elif c.isalpha() or c in "_$" or ord(c) > 127 or c.isdigit() or c in ".-":
            j = i
            while j < n and not text[j].isspace() and text[j] not in _PUNCT and text[j] not in "\"'" \
                    and not text.startswith("//", j) and not text.startswith("/*", j):
                j += 1
            word = text[i:j]
            yield ("number" if (c.isdigit() or c in ".-") else "word"), word
            i = j
        else:
            yield c, c
            i += 1


def parse(text: str) -> list[LoginModule]:
    toks = list(_tokens(text))
    modules: list[LoginModule] = []
    i = 0
    while i < len(toks):
        kind, cls = toks[i]
        if kind not in ("word", "quoted"):
            raise JaasError(f"Unexpected {cls!r} in JAAS config where a login module class was expected")
        if i + 1 >= len(toks):
            raise JaasError("Login module control flag not specified in JAAS config")
        flag = toks[i + 1][1]
        if flag.upper() not in FLAGS:
            raise JaasError(f"Invalid login module control flag '{flag}' in JAAS config")
        i += 2
        options: dict[str, str] = {}
        while i < len(toks) and toks[i][0] != ";":
            key = toks[i][1]
            if i + 2 >= len(toks) or toks[i + 1][0] != "=" or toks[i + 2][0] not in ("word", "quoted"):
                raise JaasError(f"Value not specified for key '{key}' in JAAS config")
            options[key] = toks[i + 2][1]
            i += 3
        if i >= len(toks):
            raise JaasError("JAAS config entry not terminated by semi-colon")
        i += 1
        modules.append(LoginModule(cls, flag.upper(), options))
    return modules


def single_module(text: str) -> LoginModule:
    """The one login module of a broker's per-mechanism JAAS property (Kafka's ``JaasContext``)."""
    modules = parse(text)
    if not modules:
        raise JaasError("JAAS config property does not contain any login modules")
    if len(modules) != 1:
        raise JaasError(f"JAAS config property contains {len(modules)} login modules, should be 1 module")
    return modules[0]
