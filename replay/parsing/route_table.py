"""The route table `_scan.route` runs: every route prefix (replay.parsing.families.ROUTES)
compiled by replay.parsing.prefixes, built once per version of the two and kept on disk
(replay.parsing.derived): compiling the 226 prefixes took about 15 ms of every parse's start.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from replay.parsing.derived import derived, source_key
from replay.parsing.families import FAMILY_CODE, ROUTES

COMPILER = Path(__file__).with_name("prefixes.py")  # the compiler's source (not imported to read it)
# what the table is built from: each (class, METHOD) with its (prefix, family code) in order
Inputs = tuple[tuple[str, str, tuple[tuple[str, int], ...]], ...]


def route_inputs() -> Inputs:
    """ROUTES as the table reads them."""
    return tuple((cls, method, tuple((r.prefix, FAMILY_CODE[r.family]) for r in routes))
                 for (cls, method), routes in ROUTES.items())


def build(inputs: Inputs) -> tuple[Any, ...]:
    """Per (class, METHOD): `class\\0METHOD` and its programs (code, sets, anchored, family code) in
    order, or None when a prefix is outside the compiled subset (polars routes that group)."""
    from replay.parsing import prefixes  # only to build: a table read from disk needs no compiler

    table = []
    for cls, method, routes in inputs:
        try:
            progs = tuple((p.code, p.sets, int(p.anchored), family)
                          for prefix, family in routes for p in [prefixes.compile_prefix(prefix)])
        except prefixes.Unsupported:
            progs = None
        table.append((f"{cls}\0{method}".encode(), progs))
    return tuple(table)


def table_key(inputs: Inputs) -> str | None:
    """The digest of what the table is built from: the compiler's source, the routes, the byte
    order of the programs' int32 code (None: the compiler's source cannot be read, so no entry)."""
    try:
        source = COMPILER.read_bytes()
    except OSError:
        return None
    return source_key("routes/1", sys.byteorder, source, repr(inputs))


def route_table() -> tuple[Any, ...]:
    """The table for `_scan.route`: from disk when built before from the same sources."""
    inputs = route_inputs()
    key = table_key(inputs)
    if key is None:
        return build(inputs)
    return derived("routes", key, lambda: build(inputs), lambda got: valid_table(got, inputs))


def valid_table(got: object, inputs: Inputs) -> bool:
    """Whether `got` has the table's shape for `inputs`: one entry per (class, METHOD), in order,
    each with None or one (code, sets, 0|1, its family code) per route, code in int32
    quadruples and sets of 32 bytes."""
    if not isinstance(got, tuple) or len(got) != len(inputs):
        return False
    for entry, (cls, method, routes) in zip(got, inputs):
        if not (isinstance(entry, tuple) and len(entry) == 2 and entry[0] == f"{cls}\0{method}".encode()):
            return False
        progs = entry[1]
        if progs is None:
            continue
        if not isinstance(progs, tuple) or len(progs) != len(routes):
            return False
        for prog, (_, family) in zip(progs, routes):
            if not (isinstance(prog, tuple) and len(prog) == 4 and isinstance(prog[0], bytes)
                    and isinstance(prog[1], bytes) and len(prog[0]) % 16 == 0 and len(prog[1]) % 32 == 0
                    and prog[2] in (0, 1) and prog[3] == family):
                return False
    return True
