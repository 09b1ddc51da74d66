"""`ducc.properties`: Java .properties parsing, and DUCC's way of reading a value (comments, booleans)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import overload

from replay.parsing.sources import InputError


PROPERTIES = "ducc.properties"


@dataclass(frozen=True)
class Properties:
    """A Java .properties file: key -> raw value and key -> 1-based line (the last definition wins).

    `stand_in`: not a file of the site's but DUCC's documented defaults, standing in for a
    missing ducc.properties (resources.defaults)."""

    file: str
    values: dict[str, str]
    lines: dict[str, int]
    stand_in: bool = False

    def raw(self, key: str) -> str | None:
        """The value as Java's Properties holds it, with ${name} placeholders resolved."""
        value = self.values.get(key)
        return None if value is None else _resolve_placeholders(value, self.values)

    def text(self, key: str, default: str | None = None) -> str | None:
        """SystemPropertyResolver.getStringProperty: the value with any '#' comment cut off."""
        value = self.raw(key)
        return default if value is None else trim_comments(value)

    @overload
    def integer(self, key: str, default: int) -> int: ...
    @overload
    def integer(self, key: str, default: None = None) -> int | None: ...

    def integer(self, key: str, default: int | None = None) -> int | None:
        """SystemPropertyResolver.getIntProperty (default when unset; InputError when not a number)."""
        value = self.text(key)
        if value is None:
            return default
        try:
            return int(value)
        except ValueError:
            raise InputError(f"{self.file} line {self.lines[key]}: {key} = {value!r} is not a number; "
                             "fix the value (the RM would not start with it)") from None

    def boolean(self, key: str, default: bool) -> bool:
        """SystemPropertyResolver.getBooleanProperty: only t/true (any case) is true."""
        value = self.text(key)
        return default if value is None else java_bool(value)

    def line(self, key: str) -> int | None:
        """Line of the key's (last) definition, None when the key is unset."""
        return self.lines.get(key)


def trim_comments(value: str) -> str:
    """Cut a value at its first '#' and trim it, as DUCC's property readers do."""
    return value.split("#", 1)[0].strip()


def java_bool(value: str) -> bool:
    """DUCC's boolean reading: 't' or 'true' in any case, everything else false."""
    return trim_comments(value).lower() in ("t", "true")


def java_bool_text(value: bool) -> str:
    """A bool as Java prints it."""
    return "true" if value else "false"


_PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")


def _resolve_placeholders(value: str, values: dict[str, str], depth: int = 0) -> str:
    """Replace ${name} by the named property (left as written when unknown, e.g. ${DUCC_HOME})."""
    if "${" not in value or depth > 10:
        return value
    def sub(m: re.Match[str]) -> str:
        name = m.group(1)
        return _resolve_placeholders(values[name], values, depth + 1) if name in values else m.group(0)
    return _PLACEHOLDER.sub(sub, value)


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    """Java Properties escapes: \\t \\n \\r \\f \\uXXXX, and a backslash before any other character."""
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2:i + 6]):
            out.append(chr(int(text[i + 2:i + 6], 16)))
            i += 6
        else:
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
    return "".join(out)


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, logical line): comments and blank lines dropped, continuations joined."""
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip(" \t\f")
        if pending is None:
            if not stripped or stripped[0] in "#!":
                continue
            start, body = number, stripped
        else:
            start, body = pending[0], pending[1] + stripped
        trailing = len(body) - len(body.rstrip("\\"))
        if trailing % 2:  # an odd number of trailing backslashes continues the line
            pending = (start, body[:-1])
        else:
            pending = None
            out.append((start, body))
    if pending is not None:
        out.append(pending)
    return out


def _split_key(line: str) -> tuple[str, str]:
    """Key and value of one logical line: the key ends at an unescaped '=', ':' or whitespace."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:].lstrip(" \t\f")
    if rest[:1] in ("=", ":"):  # one separator, possibly surrounded by whitespace
        rest = rest[1:].lstrip(" \t\f")
    return _unescape(key), _unescape(rest)


def parse_properties(text: str, file: str = PROPERTIES) -> Properties:
    """Parse Java .properties text (later definitions of a key replace earlier ones, as in Java)."""
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in _logical_lines(text):
        key, value = _split_key(line)
        values[key] = value
        lines[key] = number
    return Properties(file, values, lines)
