"""`read_resources`: read a resources directory and build the `config`, `classes` and `nodepools` frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from replay.model.resources.classes import ClassRow, resolve_classes
from replay.model.resources.classfile import STANZA_KINDS, stanza_error, parse_stanzas
from replay.model.resources.config import config_rows, jd_row, registry_unread_row, user_rows
from replay.model.resources.defaults import documented_properties
from replay.model.resources.files import read_text, resolve_file
from replay.model.resources.nodepools import resolve_nodepools
from replay.model.resources.properties import PROPERTIES, parse_properties
from replay.parsing.sources import InputError
from replay.parsing.tables import SCHEMAS


DEFAULT_CLASS_FILE = "ducc.classes"
DEFAULT_USER_FILE = "ducc.users"
# every name the node files list (full, short, IP) and its pool: what the RM maps at start
# (a log's bootstrap shows it as `updateNodepoolsByNode` lines, the `nodes` table's `map` events)
LISTED_NODES = "listed_nodes"


def read_resources(path: Path) -> dict[str, pl.DataFrame]:
    """The `config`, `classes` and `nodepools` tables from a DUCC resources directory, and
    `listed_nodes` (LISTED_NODES)."""
    root = Path(path)
    if not root.is_dir():
        raise InputError(f"{root}: no such directory; give --config the DUCC resources directory "
                         "($DUCC_HOME/resources) the RM was started with")
    prop_path = root / PROPERTIES
    # without ducc.properties, DUCC's documented defaults stand in; what decides scheduling is left
    # open for the replay to infer from the log (replay.model.settings)
    props = parse_properties(read_text(prop_path), PROPERTIES) if prop_path.is_file() else documented_properties()
    class_name = props.text("ducc.rm.class.definitions") or DEFAULT_CLASS_FILE
    class_path = resolve_file(root, class_name)
    if class_path is None:
        raise InputError(f"{root}: class file {class_name} (ducc.rm.class.definitions) is missing; "
                         "copy it from the production $DUCC_HOME/resources")
    stanzas = parse_stanzas(read_text(class_path), class_path.name)
    by_kind = {k: [s for s in stanzas if s.kind == k] for k in STANZA_KINDS}
    if not by_kind["Nodepool"]:
        raise InputError(f"{class_path.name}: no Nodepool is defined; the RM needs at least one")
    classes = resolve_classes(by_kind["Class"], props)
    pools = resolve_nodepools(by_kind["Nodepool"], classes, props, root)

    users = list(by_kind["User"])
    user_name = props.text("ducc.rm.user.registry", DEFAULT_USER_FILE) or DEFAULT_USER_FILE
    user_path = resolve_file(root, user_name)
    if user_path is not None:  # the registry is optional for the RM too
        more = parse_stanzas(read_text(user_path), user_path.name)
        bad = next((s for s in more if s.kind != "User"), None)
        if bad is not None:
            raise stanza_error(bad, f"only User stanzas belong in the user registry, found {bad.kind}")
        users += more
    config = config_rows(props, classes, by_kind["Nodepool"][0], class_path.name)
    config += user_rows(users, classes)
    if user_path is None and prop_path.is_file():  # (without ducc.properties every row is open already)
        config.append(registry_unread_row(props, user_name))
    jd = jd_row(props, classes)
    if jd is not None:
        config.append(jd)

    return {
        "config": _frame("config", [dict(zip(("key", "value", "file", "line"), r)) for r in config]),
        "classes": _frame("classes", [_class_dict(c) for c in sorted(classes, key=lambda c: c.name)]),
        "nodepools": _frame("nodepools", [vars(p) for p in pools]),
        LISTED_NODES: pl.DataFrame([(n, p.name) for p in pools for n in p.listed], orient="row",
                                   schema={"host": pl.String, "nodepool": pl.String}),
    }


def _class_dict(c: ClassRow) -> dict[str, Any]:
    d = vars(c).copy()
    d.pop("default")
    return d


def _frame(table: str, rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows as a frame with exactly the parser's schema for `table`."""
    schema = SCHEMAS[table]
    return pl.DataFrame([{k: r.get(k) for k in schema} for r in rows], schema=schema)
