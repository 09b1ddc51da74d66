"""The lark side: load grammars/rmlog.lark and turn parse trees into rows (dicts of strings).

One generic Transformer serves every family, following the grammar's conventions (see the
header of rmlog.lark): field rules give values, list rules (`*_list`) give lists, every other
rule gathers the fields below it into a row and broadcasts them into the rows of its children.
Values stay strings here; tables.py casts them, the same way for both engines.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from importlib import resources
from typing import Any

from lark import Lark, Token, Transformer
from lark.exceptions import LarkError

from replay.parsing.families import all_families

try:  # lark-cython roughly doubles the speed of the lexer and parser when present
    import lark_cython

    _PLUGINS: dict[str, Any] = {"_plugins": lark_cython.plugins}
    TOKEN_TYPES: tuple[type[Token], ...] = (Token, lark_cython.Token)  # the Cython one has the same fields
except ImportError:  # pragma: no cover - the package depends on it, but stay usable
    _PLUGINS = {}
    TOKEN_TYPES = (Token,)

Row = dict[str, Any]

# Named terminals that carry a value when they appear directly in a row rule.
TOKEN_FIELDS = {
    "STATE_TAG": "tag", "HOST_DOWN": "down", "VARY_WORD": "vary", "SECTION": "section",
    "CS_KIND": "kind", "POTENTIALLY_NEEDY": "potentially_needy", "SPACE_KIND": "space_kind",
    "RICH_FROM": "rich_from", "CLEAR_KIND": "clear_kind", "ASSIGN_HV": "assign",
    "NEEDY_WHAT": "needy_what", "EVICT_RECURSE": "recurse", "REASON_WORD": "because",
    "FREE": "free", "UUID": "uuid", "BYPASS_WHY": "why",
}
# Field rules named differently from their column (`class` is a keyword in the grammar's Python side).
RENAMES = {"klass": "class", "bypass_host": "host", "bypass_why": "because"}


def _split_share(text: str) -> list[tuple[str, str]]:
    host, _, sid = text.rpartition(".")
    return [("host", host), ("share_id", sid)]


def _split_resource(text: str) -> list[tuple[str, str]]:
    share, _, rest = text.partition("^")
    init_ms, _, purged = rest.partition("^")
    return _split_share(share) + [("init_ms", init_ms), ("purged", "true" if purged == "P" else "false")]


def _split_typed(text: str) -> list[tuple[str, str]]:
    return [("type_code", text[0]), ("job_id", text[1:].lstrip("_."))]


# Field rules whose token text holds more than one value, or needs a unit or prefix removed.
SPLITTERS: dict[str, Callable[[str], list[tuple[str, str]]]] = {
    "share": _split_share,
    "res": _split_resource,
    "typed_id": _split_typed,
    "typed_ref": _split_typed,
    "cs_memory": lambda t: [("memory_gb", t.removesuffix("GB"))],
    "allot_gb": lambda t: [("allotment_gb", t.removesuffix("GB"))],
    "wantedby": lambda t: [("entity", t.removeprefix("wantedby."))],
    "jd_host_class": lambda t: [("value", t)],
    "paren_pool": lambda t: [("nodepool", t[1:-1])],  # "(" + name + ")": a name may hold parentheses
    "count_dot": lambda t: [("count", t.rstrip("."))],
    "evict_pool": lambda t: [("nodepool", t)],  # 2.0.0-2.1.0 print the pool on every eviction row
}


def token_value(kind: str, text: str) -> str:
    """The value a named terminal contributes (brackets and padding removed)."""
    return text.strip("[] ") if kind == "FREE" else text.strip()


class _Fields(tuple[tuple[str, Any], ...]):
    """(name, value) pairs produced by a field rule; distinct from rows."""


class RowBuilder(Transformer[Token, Any]):
    """Generic transformer: fields -> values, rules -> rows (see module docstring)."""

    def __default__(self, data: str, children: list[Any], meta: Any) -> Any:
        data = str(data)
        if data.endswith("_list"):
            vals = [c.value for c in children if isinstance(c, TOKEN_TYPES) and c.type != "NL"]
            return _Fields([(data, vals)])
        if len(children) == 1 and isinstance(children[0], TOKEN_TYPES):
            token = children[0]
            if token.type in TOKEN_FIELDS:  # a row rule whose only value is a named terminal
                return _Fields([(TOKEN_FIELDS[token.type], token_value(token.type, token.value))])
            text = token.value.strip()
            if data in SPLITTERS:
                return _Fields(SPLITTERS[data](text))
            return _Fields([(RENAMES.get(data, data), text)])
        own: Row = {}
        rows: list[Row] = []
        for child in children:
            if isinstance(child, _Fields):
                own.update(child)
            elif isinstance(child, TOKEN_TYPES):
                name = TOKEN_FIELDS.get(child.type)
                if name:
                    own[name] = token_value(child.type, child.value)
            elif isinstance(child, dict):
                rows.append(child)
            elif isinstance(child, list):
                rows.extend(child)
        if rows:
            return [{**own, **row} for row in rows]
        return own or None


def as_rows(result: Any) -> list[Row]:
    """Normalise a family's transform result to a list of rows (a record is at least one row)."""
    if result is None:
        return [{}]
    if isinstance(result, _Fields):
        return [dict(result)]
    if isinstance(result, dict):
        return [result]
    return list(result)


def grammar_text(name: str = "rmlog.lark") -> str:
    """The text of a grammar in grammars/, read from the installed package."""
    return resources.files("grammars").joinpath(name).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def parser() -> Lark:
    """The LALR parser of message bodies, with one start symbol per family."""
    return Lark(grammar_text(), parser="lalr", lexer="contextual", start=all_families(),
                maybe_placeholders=False, cache=True, **_PLUGINS)


@lru_cache(maxsize=1)
def header_parser() -> Lark:
    """The LALR parser of record header lines (grammars/header.lark)."""
    return Lark(grammar_text("header.lark"), parser="lalr", lexer="contextual", start="record_header",
                maybe_placeholders=False, cache=True, **_PLUGINS)


_BUILDER = RowBuilder()


def parse_body(family: str, text: str) -> list[Row] | str:
    """Rows of one record body, or an error message (str) when the grammar rejects it."""
    try:
        tree = parser().parse(text, start=family)
    except LarkError as exc:
        return f"{family}: {describe_error(exc)}"
    return as_rows(_BUILDER.transform(tree))


def describe_error(exc: LarkError) -> str:
    """A one-line description of a lark error (lark-cython's str() of some errors fails)."""
    token = getattr(exc, "token", None)
    where = f"line {getattr(exc, 'line', '?')} column {getattr(exc, 'column', '?')}"
    if token is not None:
        return f"unexpected {getattr(token, 'type', '?')} {str(token)[:40]!r} at {where}"
    char = getattr(exc, "char", None)
    return f"unexpected character {char!r} at {where}" if char else type(exc).__name__


def parse_header(line: str) -> dict[str, str] | None:
    """The header fields of one line, or None when it is not a record header (a continuation)."""
    try:
        tree = header_parser().parse(line)
    except LarkError:
        return None
    toks = {t.type: t.value for t in tree.children if isinstance(t, TOKEN_TYPES)}
    component, _, cls = toks["LOGGER"].rpartition(".")
    return {
        "ts": toks["TIMESTAMP"], "level": toks["LEVEL"], "component": component, "cls": cls,
        "jid": toks["JID"], "tid": toks["THREAD"][2:-1], "method": toks["METHOD"],
        "body": toks.get("BODY", "").strip(),
    }
