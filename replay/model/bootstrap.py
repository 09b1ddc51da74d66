"""The configuration a replay needs before any cycle (`Bootstrap`), as the log's bootstrap or
`--config DIR` states it, with what they leave open read off the log (replay.model.settings).

The classes' cap settings a missing ducc.properties leaves open are settled later, by replaying
the cap chain on the log's cycles (replay.model.start.bootstrap): `open_cap_classes` names them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import polars as pl

from replay.model import settings as st
from replay.model.release import SETTING as RELEASE_SETTING
from replay.model.release import ReleaseChoice
from replay.model.release import choose as choose_release
from replay.model.resources.config import REGISTRY_UNREAD
from replay.model.resources.defaults import DEFAULTS_FILE
from replay.parsing.sources import InputError
from rmref import UNLIMITED
from rmref.behaviours import for_release
from rmref.model import ClassDef, Config, Nodepool
from rmref.trees import process_order


@dataclass(frozen=True)
class Bootstrap:
    """The configuration a replay needs before any cycle: from the log, or from `--config DIR`
    and the log; `assumed` says where each setting rmref reads came from."""

    config: Config
    classes: tuple[ClassDef, ...]
    nodepools: tuple[Nodepool, ...]
    assumed: tuple[st.Assumption, ...] = ()
    release: ReleaseChoice | None = None  # the DUCC release replayed (replay.model.release), in config.behaviours
    undefined: tuple[tuple[str, str | None, int | None], ...] = ()  # (class, file, line): see `undefined_classes`
    # neither the log's bootstrap nor a user registry of --config was read: whether a user has an
    # allotment of its own (ducc.users) is not known
    users_open: bool = False
    # the fragmentation thresholds other than config's that the log allows, nearest first, where
    # neither a configuration file nor a line pins it (replay.model.settings.threshold_reading)
    thresholds_open: tuple[int, ...] = ()
    # the log's defragmentation has been tried under each open threshold (replay.model.threshold)
    threshold_settled: bool = False

    def process_order(self, class_name: str | None, memory_gb: int) -> int:
        """Quanta per process of a job of the class, in its pool tree's quantum (rmref.trees.process_order)."""
        return process_order(self.classes, self.nodepools, class_name, memory_gb, self.config.quantum_gb)


def _int(value: object, default: int) -> int:
    try:
        return int(str(value).split()[0])
    except (TypeError, ValueError, IndexError):
        return default


def _user_allotments(config: dict[str, str]) -> dict[str, int]:
    """ducc.users overrides of the global allotment (GB), as the RM reads them.

    The RM takes any `max-allotment...` key whose *value* has no dot as the user's global limit
    (it tests the value, not the key, for a class suffix), so `max-allotment.<class> = 64`
    overrides the global allotment too; of several, the last one read wins.
    """
    out: dict[str, int] = {}
    for key, value in config.items():
        m = re.fullmatch(r"user\.(.+?)\.max-allotment(\..*)?", key)
        if m and "." not in value and _int(value, -1) >= 0:
            out[m.group(1)] = _int(value, UNLIMITED)
    return out


def _setting(rows: dict[str, tuple[Any, Any, Any]], key: str, setting: str,
             infer: Callable[[], st.Assumption]) -> st.Assumption:
    """A config row the log's bootstrap or --config gives; inferred from the log when only DUCC's
    documented default stands for it."""
    value, file, line = rows.get(key, (None, None, None))
    if not _stated(rows, key):
        return infer()
    return st.from_config(setting, value, file, line)


def _stated(rows: dict[str, tuple[Any, Any, Any]], key: str) -> bool:
    """Whether the log's bootstrap or a file of --config gives the row (not DUCC's documented default)."""
    value, file, _line = rows.get(key, (None, None, None))
    return value is not None and file != DEFAULTS_FILE


OPEN_THRESHOLDS = 64  # the most other fragmentation thresholds tried (a job rarely holds more processes)


def _open_thresholds(value: int, bounds: tuple[int, int] | None) -> tuple[int, ...]:
    """The thresholds in `bounds` but `value`, nearest to it first (then the lower)."""
    if bounds is None:
        return ()
    lo, hi = bounds
    others = [t for t in range(lo, min(hi, lo + OPEN_THRESHOLDS) + 1) if t != value]
    return tuple(sorted(others, key=lambda t: (abs(t - value), t)))



def read_bootstrap(tables: Mapping[str, pl.DataFrame]) -> Bootstrap:
    """Configuration, classes and nodepools from `config`/`classes`/`nodepools` tables, with what
    they leave open inferred from the log (replay.model.settings), the open cap settings aside.

    Raises InputError naming what is missing when the log (or resources) did not have them.
    """
    missing = [name for name in ("classes", "nodepools") if tables[name].is_empty()]
    if missing:
        raise InputError(
            f"the log has no bootstrap section ({' and '.join(missing)} missing, probably rolled away): "
            "pass --config DIR with the DUCC resources directory (ducc.classes; ducc.properties if you have it)"
        )
    rows = {k: (v, f, ln) for k, v, f, ln in tables["config"].select("key", "value", "file", "line").iter_rows()}
    config = {k: v for k, (v, _f, _ln) in rows.items()}
    pools = tables["nodepools"]
    open_pools = set(pools.filter(pl.col("quantum").is_null())["name"].to_list())
    if open_pools:  # ducc.rm.share.quantum unknown: read off the jobs of the pools that take it
        quantum = st.infer_quantum(tables, {r["name"] for r in tables["classes"].iter_rows(named=True)
                                            if r["nodepool"] in open_pools}, machines=len(open_pools) == pools.height)
    else:
        quantum = st.from_config(st.QUANTUM, pools["quantum"][0], f"nodepool {pools['name'][0]}, {pools['file'][0]}",
                                 pools["line"][0])
    classes = tuple(
        ClassDef(
            name=r["name"], policy=r["policy"], priority=r["priority"], weight=r["weight"] or 0,
            nodepool=r["nodepool"], init_cap=r["init_cap"] or 0,
            expand_by_doubling=bool(r["expand_by_doubling"]), prediction=bool(r["prediction"]),
            prediction_fudge=r["prediction_fudge"] or 0, cap=_int(r["cap"], UNLIMITED),
            max_allotment=_int(r["max_allotment"], UNLIMITED),
        )
        for r in tables["classes"].iter_rows(named=True) if _whole(r)
    )
    users = tuple(sorted(_user_allotments(config).items()))
    threshold, threshold_bounds = (
        (st.from_config(st.THRESHOLD, *rows["fragmentation threshold"]), None)
        if _stated(rows, "fragmentation threshold") else st.threshold_reading(tables, classes))
    assumed = [
        quantum,
        threshold,
        _setting(rows, "do defragmentation", st.DEFRAGMENTATION, lambda: st.infer_defragmentation(tables)),
        _setting(rows, "global allotment", st.GLOBAL_ALLOTMENT,
                 lambda: st.infer_global_allotment(tables, {user for user, _ in users})),
    ]
    chosen = choose_release(tables)
    assumed.append(st.Assumption(RELEASE_SETTING, chosen.release.name,
                                 st.CONFIG if chosen.source == "banner" and "not a release" not in chosen.evidence
                                 else chosen.source, chosen.evidence))
    users_open = not users and (properties_unread(tables, users_too=True) or registry_unread(tables))
    # without ducc.users, a user whose allotment lines disagree with the global reading keeps its own
    shown = st.infer_user_allotments(tables, _int(assumed[3].value, UNLIMITED)) if users_open else ()
    if shown:
        users = shown
        assumed.append(st.user_allotments_assumed(shown))
    cfg = Config(
        behaviours=for_release(chosen.release.name),
        quantum_gb=_int(assumed[0].value, 1),
        fragmentation_threshold=_int(assumed[1].value, 8),
        defragmentation=assumed[2].value.lower() == "true",
        global_allotment=_int(assumed[3].value, UNLIMITED),
        user_allotments=users,
    )
    # a pool whose quantum the files leave open takes the configuration's (inferred) one
    nodepools = tuple(Nodepool(r["name"], r["parent"], r["search_order"] or 100, r["quantum"] or 0)
                      for r in tables["nodepools"].iter_rows(named=True))
    return Bootstrap(cfg, classes, nodepools, tuple(assumed), chosen, undefined_classes(tables),
                     users_open=users_open,
                     thresholds_open=_open_thresholds(cfg.fragmentation_threshold, threshold_bounds))


def properties_unread(tables: Mapping[str, pl.DataFrame], users_too: bool = False) -> bool:
    """Whether neither the log's bootstrap nor --config gave ducc.properties (`users_too`: nor
    ducc.users): the configuration rows (but a user registry's) are DUCC's documented defaults."""
    # --config with ducc.classes alone reads the documented defaults for the rest; a log's own
    # bootstrap, ducc.properties or ducc.users name their own files
    rows = tables["config"]
    if not users_too:
        rows = rows.filter(~pl.col("key").str.starts_with("user."))
    read = set(rows["file"].drop_nulls().to_list()) - set(tables["classes"]["file"].drop_nulls().to_list())
    return read == {DEFAULTS_FILE}


def registry_unread(tables: Mapping[str, pl.DataFrame]) -> bool:
    """Whether --config's ducc.properties names a user registry (ducc.users) the folder lacks: the
    RM read it where it existed, so the users' own allotments are not known."""
    return bool(tables["config"].filter(pl.col("key") == REGISTRY_UNREAD).height)


def _whole(row: Mapping[str, Any]) -> bool:
    """Whether a class's row gives what every scheduling phase reads of it: its policy, priority
    and nodepool, and a fair-share class's weight (a span cut inside its block leaves them null)."""
    return (all(row[f] is not None for f in ("policy", "priority", "nodepool"))
            and (row["weight"] is not None or row["policy"] != "FAIR_SHARE"))


def undefined_classes(tables: Mapping[str, pl.DataFrame]) -> tuple[tuple[str, str | None, int | None], ...]:
    """The classes the RM names, in a nodepool's class list or a scheduling pass over the class,
    that no whole class definition gives, each with the first line naming it. The RM refuses work
    of a class it does not know, so such a class's definition is lost (a span cut from the boot
    section, or inside the class's own block), never the RM's to refuse."""
    defined = {r["name"] for r in tables["classes"].iter_rows(named=True) if _whole(r)}
    named: dict[str, tuple[str | None, int | None]] = {}
    for classes, file, line in tables["nodepools"].select("classes", "file", "line").iter_rows():
        for name in classes or ():
            named.setdefault(name, (file, line))
    if "counts" in tables:
        passes = (tables["counts"].filter(pl.col("class").is_not_null()).group_by("class")
                  .agg(pl.col("file").first(), pl.col("line").first()).sort("class"))
        for name, file, line in passes.iter_rows():
            named.setdefault(name, (file, line))
    return tuple((name, *named[name]) for name in sorted(set(named) - defined))


def open_cap_classes(tables: Mapping[str, pl.DataFrame]) -> set[str]:
    """The classes whose cap settings the files leave open: a missing ducc.properties, or a class
    block the log lost part of (a span cut inside the boot section), whose missing settings would
    otherwise read as false."""
    return {r["name"] for r in tables["classes"].iter_rows(named=True)
            if any(r[field] is None for field in _CAP_FIELDS)}


_CAP_FIELDS = ("init_cap", "expand_by_doubling", "prediction")  # the cap chain's class settings


def with_cap_settings(boot: Bootstrap, names: set[str], s: st.CapSettings) -> Bootstrap:
    """`boot` with the classes `names` on the cap settings `s`."""
    classes = tuple(replace(c, init_cap=s.init_cap, expand_by_doubling=s.expand_by_doubling, prediction=s.prediction)
                    if c.name in names else c for c in boot.classes)
    return replace(boot, classes=classes)

