"""Class-file syntax (`ducc.classes`, `ducc.users`): tokens, then `Kind name [parent] { ... }` stanzas."""

from __future__ import annotations

import re
from dataclasses import dataclass

from replay.parsing.sources import InputError


_DELIMS = re.compile(r"([{}=;,\s])")
_PUNCT = ("{", "}", "=", ";")


@dataclass(frozen=True)
class Token:
    """One token of a class/user file and the 1-based line it is on."""

    text: str
    line: int


def tokenize(text: str) -> list[Token]:
    """Tokens as NodeConfiguration reads them: '#' lines and blank lines skipped, every line end a
    ';', and '{' '}' '=' ';' single tokens; spaces, tabs and commas only separate."""
    out: list[Token] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        for part in _DELIMS.split(line + ";"):
            if part and not part.isspace() and part != ",":
                out.append(Token(part, number))
    return out


@dataclass(frozen=True)
class Stanza:
    """One `Kind name [parent] { key = value; ... }` definition."""

    kind: str
    name: str
    parent: str | None
    props: dict[str, str]
    file: str
    line: int


class _Reader:
    """A cursor over tokens, raising InputError that names file and line."""

    def __init__(self, tokens: list[Token], file: str):
        self.tokens, self.file, self.pos = tokens, file, 0

    def peek(self) -> Token | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def next(self) -> Token | None:
        tok = self.peek()
        self.pos += tok is not None
        return tok

    def fail(self, tok: Token | None, what: str) -> InputError:
        line = tok.line if tok is not None else (self.tokens[-1].line if self.tokens else 1)
        return InputError(f"{self.file} line {line}: {what}; fix the file (the RM would not start with it)")


def _value(reader: _Reader, key: Token) -> str:
    """The value after a key: an optional '=', then words up to ';' (line end), '{' or '}'."""
    words: list[str] = []
    tok = reader.peek()
    if tok is not None and tok.text == "=":
        reader.next()
    while (tok := reader.peek()) is not None:
        if tok.text == ";":
            reader.next()
            break
        if tok.text in ("{", "}"):  # a brace ends the value; '=' inside a value is kept, as the RM does
            if not words:
                raise reader.fail(tok, f"missing value for {key.text!r}" if tok.text == "}" else "missing '}'")
            break
        words.append(tok.text)
        reader.next()
    if not words:
        raise reader.fail(key, f"missing value for {key.text!r}")
    return " ".join(words)  # multi-word values are kept space-joined, as the RM keeps them


def _body(reader: _Reader) -> dict[str, str]:
    """Properties up to the closing '}' (end of file also closes, as the RM tolerates it)."""
    props: dict[str, str] = {}
    while (tok := reader.next()) is not None:
        if tok.text == ";":
            continue
        if tok.text == "}":
            return props
        if tok.text in ("{", "="):
            raise reader.fail(tok, "missing '}'" if tok.text == "{" else "expected a property name before '='")
        value = _value(reader, tok)
        if tok.text in props:
            raise reader.fail(tok, f"duplicate property {tok.text!r}")
        props[tok.text] = value
    return props


STANZA_KINDS = ("Nodepool", "Class", "User")


def parse_stanzas(text: str, file: str) -> list[Stanza]:
    """Parse a class or user file into its stanzas, in file order."""
    reader = _Reader(tokenize(text), file)
    out: list[Stanza] = []
    while (tok := reader.next()) is not None:
        if tok.text == ";":
            continue
        if tok.text not in STANZA_KINDS:
            raise reader.fail(tok, f"expected Nodepool, Class or User, found {tok.text!r}")
        name = reader.next()
        if name is None or name.text in _PUNCT:
            raise reader.fail(name or tok, f"missing {tok.text} name")
        after = reader.next()
        parent = None
        if after is not None and after.text not in _PUNCT:
            parent, after = after.text, reader.next()
        if after is None or after.text != "{":
            raise reader.fail(after or name, f"missing '{{' after {tok.text} {name.text}")
        out.append(Stanza(tok.text, name.text, parent, _body(reader), file, tok.line))
    return out


def stanza_error(st: Stanza, what: str) -> InputError:
    """The error that names the stanza's file and line, and says to fix the file."""
    return InputError(f"{st.file} line {st.line}: {what}; fix the file (the RM would not start with it)")
