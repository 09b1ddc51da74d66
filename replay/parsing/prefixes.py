"""Route prefixes (replay.parsing.families.ROUTES) compiled for the scanner's backtracking matcher.

The routes are regexes in Rust's syntax, run by polars on the polars path. The compiled scanner
routes the ASCII records itself, so each prefix is compiled here into a small program for
`_scan.route`: a byte set per character, SPLIT/JMP for alternation and repetition, and the two
anchors. Only the subset the routes use is understood (literals, escapes, classes, groups,
alternation, greedy or lazy quantifiers, ^ and $); anything else raises `Unsupported`, and that
(class, METHOD) is routed by polars instead. On ASCII text the program and the regex accept the
same bodies (tests/unit/test_scan_routes.py holds them to it with Hypothesis).
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

OP_SET, OP_SPLIT, OP_JMP, OP_BOL, OP_EOL, OP_MATCH, OP_SPAN = range(7)
_BLANK = frozenset(b" \t\n\v\f\r")
_DIGIT = frozenset(string.digits.encode())
_WORD = frozenset((string.ascii_letters + string.digits + "_").encode())
_ALL = frozenset(range(256))
_CLASSES = {"s": _BLANK, "S": _ALL - _BLANK, "d": _DIGIT, "D": _ALL - _DIGIT, "w": _WORD, "W": _ALL - _WORD}


class Unsupported(ValueError):
    """The regex uses syntax outside the compiled subset (polars routes it instead)."""


@dataclass(frozen=True)
class Program:
    """A compiled prefix: int32 code [op, x, y, set] per instruction, 32-byte sets, anchored?

    OP_SPAN (set, at least x) takes the longest run of set bytes and never backtracks into it."""

    code: bytes
    sets: bytes
    anchored: bool


# AST nodes: ("set", frozenset) | ("seq", [nodes]) | ("alt", [nodes]) | ("rep", node, lo, hi|None)
# | ("bol",) | ("eol",)
Node = tuple[Any, ...]  # its parts differ by kind (above)


class _Parser:
    """Recursive descent over the regex text."""

    def __init__(self, text: str) -> None:
        self.text, self.at = text, 0

    def peek(self) -> str:
        return self.text[self.at] if self.at < len(self.text) else ""

    def take(self) -> str:
        ch = self.peek()
        if not ch:
            raise Unsupported("unexpected end of pattern")
        self.at += 1
        return ch

    def alternation(self) -> Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.at += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def sequence(self) -> Node:
        items = []
        while self.peek() not in ("", "|", ")"):
            items.append(self.quantified(self.atom()))
        return ("seq", items)

    def atom(self) -> Node:
        ch = self.take()
        if ch == "^":
            return ("bol",)
        if ch == "$":
            return ("eol",)
        if ch == ".":
            return ("set", _ALL - {ord("\n")})
        if ch == "[":
            return ("set", self.bracket())
        if ch == "(":
            if self.text.startswith("?:", self.at):
                self.at += 2
            elif self.peek() == "?":
                raise Unsupported("group flags or named groups")
            inner = self.alternation()
            if self.take() != ")":
                raise Unsupported("unbalanced group")
            return inner
        if ch == "\\":
            return ("set", self.escape())
        if ch in "*+?{)":
            raise Unsupported(f"misplaced {ch!r}")
        return ("set", self.literal(ch))

    def literal(self, ch: str) -> frozenset[int]:
        if ord(ch) >= 0x80:
            raise Unsupported("non-ASCII literal")
        return frozenset({ord(ch)})

    def escape(self) -> frozenset[int]:
        ch = self.take()
        if ch in _CLASSES:
            return _CLASSES[ch]
        if ch in string.punctuation:
            return frozenset({ord(ch)})
        raise Unsupported(f"escape \\{ch}")

    def bracket(self) -> frozenset[int]:
        negate = self.peek() == "^"
        self.at += negate
        members: set[int] = set()
        first = True
        while first or self.peek() != "]":
            first = False
            ch = self.take()
            if ch == "[":
                raise Unsupported("nested class")
            if ch == "\\":
                members |= self.escape()
                if self.peek() == "-" and self.text[self.at + 1: self.at + 2] not in ("]", ""):
                    raise Unsupported("a range from an escape")
                continue
            lo = ord(ch)
            if self.peek() == "-" and self.text[self.at + 1: self.at + 2] not in ("]", ""):
                self.at += 1
                hi = self.take()
                if hi == "\\":
                    raise Unsupported("escaped range end")
                members |= set(range(lo, ord(hi) + 1))
            else:
                members.add(lo)
        self.at += 1
        if any(m >= 0x80 for m in members):
            raise Unsupported("non-ASCII class member")
        return frozenset(_ALL - members if negate else members)

    def quantified(self, node: Node) -> Node:
        while True:
            ch = self.peek()
            if ch in ("*", "+", "?"):
                self.at += 1
                lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
            elif ch == "{":
                close = self.text.find("}", self.at)
                if close < 0:
                    raise Unsupported("unclosed repetition")
                spec = self.text[self.at + 1: close]
                parts = spec.split(",")
                if not all(p.isdigit() for p in parts if p) or len(parts) > 2 or not parts[0]:
                    raise Unsupported(f"repetition {{{spec}}}")
                lo = int(parts[0])
                hi = lo if len(parts) == 1 else (int(parts[1]) if parts[1] else None)
                self.at = close + 1
            else:
                return node
            if self.peek() == "?":  # lazy: the same bodies match
                self.at += 1
            if _nullable(node):
                raise Unsupported("repetition of something that can be empty")
            node = ("rep", node, lo, hi)


def _nullable(node: Node) -> bool:
    kind = node[0]
    if kind == "set":
        return False
    if kind in ("bol", "eol"):
        return True
    if kind == "seq":
        return all(_nullable(n) for n in node[1])
    if kind == "alt":
        return any(_nullable(n) for n in node[1])
    return node[2] == 0 or _nullable(node[1])


class _Emitter:
    """AST -> instructions, the classic Thompson construction with jumps patched in place."""

    def __init__(self) -> None:
        self.code: list[list[int]] = []
        self.sets: list[bytes] = []

    def emit(self, op: int, x: int = 0, y: int = 0, s: int = 0) -> int:
        self.code.append([op, x, y, s])
        return len(self.code) - 1

    def node(self, node: Node) -> None:
        kind = node[0]
        if kind == "set":
            self.sets.append(_set_bytes(node[1]))
            self.emit(OP_SET, s=len(self.sets) - 1)
        elif kind == "bol":
            self.emit(OP_BOL)
        elif kind == "eol":
            self.emit(OP_EOL)
        elif kind == "seq":
            items = node[1]
            for i, item in enumerate(items):
                if _possessive(item, items[i + 1:]):
                    self.span(item[1][1], item[2])
                else:
                    self.node(item)
        elif kind == "alt":
            jumps = []
            for branch in node[1][:-1]:
                split = self.emit(OP_SPLIT)
                self.code[split][1] = len(self.code)
                self.node(branch)
                jumps.append(self.emit(OP_JMP))
                self.code[split][2] = len(self.code)
            self.node(node[1][-1])
            for j in jumps:
                self.code[j][1] = len(self.code)
        else:
            self.repeat(node[1], node[2], node[3])

    def span(self, members: frozenset[int], least: int) -> None:
        self.node(("set", members))  # registers the set; turned into a SPAN below
        self.code[-1][0], self.code[-1][1] = OP_SPAN, least

    def repeat(self, inner: Node, lo: int, hi: int | None) -> None:
        for _ in range(lo):
            self.node(inner)
        if hi is None:  # L: SPLIT body, out; body; JMP L
            top = self.emit(OP_SPLIT)
            self.code[top][1] = len(self.code)
            self.node(inner)
            self.emit(OP_JMP, top)
            self.code[top][2] = len(self.code)
            return
        splits = []
        for _ in range(hi - lo):
            splits.append(self.emit(OP_SPLIT))
            self.code[splits[-1]][1] = len(self.code)
            self.node(inner)
        for s in splits:
            self.code[s][2] = len(self.code)


@lru_cache(maxsize=None)
def _set_bytes(members: frozenset[int]) -> bytes:
    """A byte set as the scanner reads it: 256 bits, byte b at bit b % 8 of byte b // 8."""
    return sum(1 << b for b in members).to_bytes(32, "little")


def _first(nodes: list[Node]) -> tuple[frozenset[int], bool]:
    """(bytes a match of `nodes` can start with, whether it can match without consuming any)."""
    first: frozenset[int] = frozenset()
    for node in nodes:
        kind = node[0]
        if kind == "set":
            return first | node[1], False
        if kind == "eol":  # consumes nothing and ends the body: nothing can follow it
            return first, False
        if kind == "bol":
            continue
        if kind == "seq":
            got, empty = _first(node[1])
        elif kind == "alt":
            parts = [_first([b]) for b in node[1]]
            got, empty = frozenset().union(*(p[0] for p in parts)), any(p[1] for p in parts)
        else:
            got, empty = _first([node[1]])
            empty = empty or node[2] == 0
        first |= got
        if not empty:
            return first, False
    return first, True


def _possessive(node: Node, rest: list[Node]) -> bool:
    """Whether an unbounded run of one byte set can take all it can, never giving any back: what
    follows it must start with a byte outside the set (so backtracking could never help)."""
    if node[0] != "rep" or node[3] is not None or node[1][0] != "set":
        return False
    follow, empty = _first(rest)
    return not empty and follow.isdisjoint(node[1][1])


@lru_cache(maxsize=None)
def compile_prefix(regex: str) -> Program:
    """Compile one route regex; raises Unsupported outside the subset."""
    parser = _Parser(regex)
    tree = parser.alternation()
    if parser.at != len(regex):
        raise Unsupported(f"unexpected {regex[parser.at]!r}")
    out = _Emitter()
    out.node(tree)
    out.emit(OP_MATCH)
    first = tree[1][0] if tree[0] == "seq" and tree[1] else tree
    return Program(np.asarray(out.code, dtype=np.int32).tobytes(), b"".join(out.sets), first == ("bol",))
