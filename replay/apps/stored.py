"""The audit kept in the cache beside the parse: computed once, read by every command after.

A cache slot (`replay.parsing.cache`) holds an input's tables; `<slot>/audits/<key>/` holds the
audit of those tables under one configuration. The key hashes what the audit's outcome depends on
besides the tables' content: the tables' own files (their digests in the parse's manifest), the
`--config` folder's files and where it contradicts the log (`config_conflicts`, which `--force`
may let through), the configuration rmref runs with (`Bootstrap`: `Config`, its `behaviours` (the
RM release, detected or `--rm-release`) included, the classes, the nodepools, the release's source
and evidence and the settings assumed, however they were chosen), rmreplay's version and the
digest of its source (replay, rmref, the grammars). A key that differs in any of them is another
folder: a stale audit is never read.

The folder holds
* `result.pickle`: the `AuditResult` (cycles, rmref's decisions, divergences, verified choices,
  tallies, coverage, cycles skipped or damaged, assumptions, config conflicts, the RM release,
  epochs), from which every output of the audit is written as a fresh run writes it;
* `checkpoints.bin` and `checkpoints.idx`: for every audited cycle, what re-running it alone
  needs (its rebuilt `CycleInput`, before the audit fills in any node IPs it infers, which a
  re-entry infers again alike; the RM's logged decisions of that cycle, what rmref carried
  into it from the cycles before (`audit.Carried`: the chained run's `rmref.Memory` and the
  phase-isolated defragmentation's wealth) and the kinds audited in it), one compressed
  record per cycle, so `explain` and the TUI re-enter any cycle without replaying from the start;
* `nodes.parquet` (every cycle's machines, `replay.model.nodes.node_cycles` on the audit's own
  inventory) and `takings.pickle` (the RM's logged takings, `replay.model.logged.Takings`): what
  the report and the TUI read of the audit's world model, computed once with it;
* `baseline.pickle`: rmref unchanged on every audited cycle (`replay.apps.baseline.BaselineCycle`,
  the audit's chained run as a what-if reads it): the baseline `whatif` and `check` read
  (`Stored.audited`), the change side starting from the checkpoints (`Stored.entry`);
* `output/`: the files `rmreplay audit -o` writes (report.json, ref_*.parquet,
  divergences.parquet, verified_choices.parquet, skipped.parquet), written by the same code,
  which a later `audit -o` copies;
* `manifest.json`, written last: the format, the key and the record count.

It is written in a hidden sibling (`.tmp-<pid>-<random>`) and renamed into place whole, so an
interrupted audit leaves nothing a later command reads (the sibling is removed by the next audit
stored beside it once its process is gone). A folder that cannot be read (damaged, another
format) is treated as absent and the audit runs again.
"""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
import zlib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import IO, Any

import polars as pl

from replay.apps.baseline import Audited, Entry, left_out
from replay.apps.audit import REF_SCHEMAS, AuditResult, Carried, CycleTrace, audit, rerun, write_audit
from replay.model.bycycle import CycleRows
from replay.model.conflicts import CONFLICTS
from replay.model.damage import resume_points
from replay.model.logged import Logged, Takings, logged_decisions, takings
from replay.model.nodes import node_cycles
from replay.model.reads import audit_columns
from replay.model.start import ReplayStart, replay_start
from replay.model.bootstrap import Bootstrap
from replay.parsing.keys import AUDIT_FORMAT, code_fingerprint, tables_id
from replay.parsing.manifest import rmreplay_version
from replay.parsing.leftovers import remove_left, temp_name
from replay.parsing.outdir import signals_held  # the outputs' rule: clean-up not interrupted
from replay.parsing.sources import InputError
from replay.parsing.store import ParquetTables
from replay.progress import OnProgress
from rmref import Phases
from rmref.model import CycleInput

FORMAT = AUDIT_FORMAT
RESULT, CHECKPOINTS, INDEX, MANIFEST = "result.pickle", "checkpoints.bin", "checkpoints.idx", "manifest.json"
NODES, TAKINGS, FRAMES, BASELINE = "nodes.parquet", "takings.pickle", "output", "baseline.pickle"
FRAME_NAMES = (*(f"ref_{k}" for k in REF_SCHEMAS), "divergences", "verified_choices", "skipped")
_KEPT = ("traces", "carried", "chained", "start", "reenter", "baseline")  # run-time state, or kept apart


def audit_key(tables: str, boot: Bootstrap, config_files: str | None, conflicts: str = "") -> str:
    """The key of an audit of the tables `tables` (tables_id) under `boot`, with `--config` files
    of digest `config_files` that contradict the log where `conflicts` says, by this rmreplay."""
    h = hashlib.sha256()
    for part in (FORMAT, rmreplay_version(), code_fingerprint(), tables, config_files or "", conflicts,
                 repr(boot.config), repr(boot.classes), repr(boot.nodepools), repr(boot.release),
                 repr(boot.assumed)):
        h.update(part.encode() + b"\0")
    return h.hexdigest()[:40]


@dataclass(frozen=True)
class Place:
    """Where one audit is (or would be) stored: `folder` (the slot's `audits/`) and its key."""

    folder: Path
    key: str

    @property
    def path(self) -> Path:
        """The stored audit's own folder."""
        return self.folder / self.key


def place_of(slot: Path | None, root: Path | None, boot: Bootstrap, config_files: str | None,
             tables: Mapping[str, pl.DataFrame] | None = None) -> Place | None:
    """The place of the audit of the tables at `root` (a parse directory or a slot's tables) in
    cache slot `slot` (`tables`: those tables as loaded, with where `--config` contradicts them);
    None when there is no slot (no cache) or no tables on disk."""
    if slot is None or root is None:
        return None
    conflicts = ""
    if tables is not None and CONFLICTS in tables:
        conflicts = json.dumps(tables[CONFLICTS].to_dicts(), sort_keys=True)
    try:
        return Place(slot / "audits", audit_key(tables_id(root), boot, config_files, conflicts))
    except (InputError, OSError):
        return None


@dataclass(frozen=True)
class Known:
    """What the report reads that the stored audit keeps: every cycle's machines
    (`replay.model.nodes.node_cycles`) and the RM's logged takings."""

    nodes: pl.DataFrame
    takings: Takings


class Stored:
    """A stored audit, opened: its result, and any audited cycle run again from its checkpoint."""

    def __init__(self, path: Path, result: AuditResult | None, index: dict[int, tuple[int, int]]) -> None:
        self.path = path
        self._result = result
        self.index = index
        if result is not None:
            result.reenter = self.trace

    @property
    def result(self) -> AuditResult:
        """The audit's result (read on first use when opened with `load(whole=False)`)."""
        if self._result is None:
            result = pickle.loads((self.path / RESULT).read_bytes())
            if not isinstance(result, AuditResult):
                raise ValueError(f"{self.path / RESULT}: not an audit's result")
            result.reenter = self.trace
            self._result = result
        return self._result

    def _record(self, cycle: int) -> tuple[CycleInput, Carried, tuple[str, ...], dict[str, Any]] | None:
        """One audited cycle's checkpoint (None: not audited)."""
        at = self.index.get(cycle)
        if at is None:
            return None
        with open(self.path / CHECKPOINTS, "rb") as f:
            f.seek(at[0])
            return _unpack(f.read(at[1]))

    def trace(self, tables: Mapping[str, pl.DataFrame], cycle: int, phases: Phases = Phases()) -> CycleTrace | None:
        """rmref's run of one audited cycle, exactly as the audit ran it, its decisions of the kinds
        the audit left in for it (`audit.rerun`; None: not audited)."""
        record = self._record(cycle)
        if record is None:
            return None
        inp, carried, kinds, at = record
        return rerun(inp, Logged(**at, rmcounter=CycleRows(tables, "rmcounter")), phases, self.result, carried, kinds)

    def entry(self, cycle: int) -> Entry:
        """One audited cycle's input, as the audit rebuilt it, and the memory its chained run carried in."""
        record = self._record(cycle)
        if record is None:
            raise KeyError(cycle)
        return record[0], record[1].memory

    def audited(self) -> Audited:
        """What `whatif` and `check` read of the audit: rmref unchanged per cycle, and the cycles left out."""
        baseline = pickle.loads((self.path / BASELINE).read_bytes())
        if not isinstance(baseline, dict):
            raise ValueError(f"{self.path / BASELINE}: not an audit's baseline")
        return Audited(baseline, left_out(self.result.skipped, self.result.damaged), self.entry)

    def frames(self) -> dict[str, pl.DataFrame]:
        """rmref's decisions and the divergences as frames (`audit.result_frames`), as stored."""
        return {name: pl.read_parquet(self.path / FRAMES / f"{name}.parquet") for name in FRAME_NAMES}

    def write(self, out: Path) -> None:
        """The audit's output files (`audit.write_audit`) into `out`: the stored ones, copied."""
        out.mkdir(parents=True, exist_ok=True)
        for p in sorted((self.path / FRAMES).iterdir()):
            shutil.copyfile(p, out / p.name)

    def nodes(self) -> pl.DataFrame:
        """Every cycle's machines (`node_cycles`), as the audit's world model had them."""
        return pl.read_parquet(self.path / NODES)

    def known(self) -> Known:
        """What the report reads of the audit's world: the machines and the logged takings."""
        return Known(self.nodes(), pickle.loads((self.path / TAKINGS).read_bytes()))


def load(place: Place | None, whole: bool = True) -> Stored | None:
    """The stored audit at `place`; None when it is not there whole (or cannot be read). Not
    `whole`: its result is read on first use (the TUI's first screen reads the frames alone)."""
    if place is None:
        return None
    path = place.path
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        if manifest.get("format") != FORMAT or manifest.get("key") != place.key:
            return None
        result = pickle.loads((path / RESULT).read_bytes()) if whole else None
        index = {int(c): (int(o), int(n)) for c, o, n in json.loads((path / INDEX).read_text())}
    except (OSError, ValueError, EOFError, pickle.UnpicklingError, AttributeError, TypeError):
        return None
    if (not isinstance(result, AuditResult) if whole else not (path / RESULT).is_file()) \
            or len(index) != manifest.get("checkpoints") or not (path / BASELINE).is_file():
        return None
    return Stored(path, result, index)


def audit_view(tables: Mapping[str, pl.DataFrame]) -> Mapping[str, pl.DataFrame]:
    """The tables as an audit reads them: only its columns, on use, where they are on disk."""
    if not isinstance(tables, ParquetTables):
        return tables
    view = ParquetTables(tables.root, audit_columns())
    view.held.update(tables.held)
    return view


def _logged_at(logged: Logged, cycle: int) -> dict[str, Any]:
    """The logged decisions of one cycle (all the audit of that cycle reads), without the RmCounter
    rows (read from the parse when the cycle is run again)."""
    out: dict[str, Any] = {}
    for f in fields(Logged):
        value = getattr(logged, f.name)
        if f.name == "detected":
            out[f.name] = frozenset(c for c in (cycle,) if c in value)
        elif f.name != "rmcounter":
            out[f.name] = {cycle: value[cycle]} if cycle in value else {}
    return out


def _pack(inp: CycleInput, logged: Logged, carried: Carried, kinds: tuple[str, ...]) -> bytes:
    """One cycle's checkpoint, compressed."""
    return zlib.compress(pickle.dumps((inp, carried, kinds, _logged_at(logged, inp.cycle)),
                                      protocol=pickle.HIGHEST_PROTOCOL), 1)


def _unpack(blob: bytes) -> tuple[CycleInput, Carried, tuple[str, ...], dict[str, Any]]:
    """A checkpoint as `_pack` packed it."""
    inp, carried, kinds, logged = pickle.loads(zlib.decompress(blob))
    return inp, carried, kinds, logged


class _Held:
    """The checkpoints of an audit that is not stored, held in memory (compressed) for a what-if."""

    def __init__(self) -> None:
        self.blobs: dict[int, bytes] = {}

    def add(self, inp: CycleInput, logged: Logged, carried: Carried, kinds: tuple[str, ...]) -> None:
        """One cycle's checkpoint."""
        self.blobs[inp.cycle] = _pack(inp, logged, carried, kinds)

    def entry(self, cycle: int) -> Entry:
        """One audited cycle's input and the memory carried into it (`Stored.entry`)."""
        inp, carried, _kinds, _logged = _unpack(self.blobs[cycle])
        return inp, carried.memory


def audited_now(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None,
                progress: OnProgress | None = None, start: ReplayStart | None = None) -> Audited:
    """The audit of every cycle run now and not stored (no cache, `--no-cache`), as a what-if reads
    it: `Stored.audited`'s figures from the same run."""
    held = _Held()
    result = audit(tables, boot, progress=progress, checkpoint=held.add, start=start)
    return Audited(result.baseline, left_out(result.skipped, result.damaged), held.entry)


class _Writer:
    """The checkpoints of an audit being stored, appended as each cycle starts; on a write error
    it stops writing (the audit goes on, and is not stored)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.index: list[tuple[int, int, int]] = []
        self.takings: Takings | None = None  # the RM's logged takings (of the audit's logged decisions)
        self.offset = 0
        self.file: IO[bytes] | None = None
        try:
            tmp.mkdir(parents=True)
            self.file = open(tmp / CHECKPOINTS, "wb")
        except OSError:
            self.file = None

    def add(self, inp: CycleInput, logged: Logged, carried: Carried, kinds: tuple[str, ...]) -> None:
        """One cycle's checkpoint."""
        if self.takings is None:
            self.takings = takings(logged)
        if self.file is None:
            return
        blob = _pack(inp, logged, carried, kinds)
        try:
            self.file.write(blob)
        except OSError:
            self.close()
            self.file = None
            return
        self.index.append((inp.cycle, self.offset, len(blob)))
        self.offset += len(blob)

    def close(self) -> bool:
        """Finish the checkpoints; whether they are whole."""
        if self.file is None:
            return False
        try:
            self.file.close()
            return True
        except OSError:
            return False


def _remove_leftovers(folder: Path) -> None:
    """Siblings left by audits whose process was killed before it could store or remove them."""
    remove_left(folder, ".tmp-")


def _finish(tmp: Path, place: Place, result: AuditResult, writer: _Writer, tables: Mapping[str, pl.DataFrame],
            nodes: pl.DataFrame) -> None:
    """Write the result, the world model's facts and the manifest (last), then rename the folder into place."""
    nodes.write_parquet(tmp / NODES, compression="zstd")
    taken = writer.takings if writer.takings is not None else takings(logged_decisions(tables))
    (tmp / TAKINGS).write_bytes(pickle.dumps(taken, protocol=pickle.HIGHEST_PROTOCOL))
    write_audit(result, tmp / FRAMES)
    (tmp / BASELINE).write_bytes(pickle.dumps(result.baseline, protocol=pickle.HIGHEST_PROTOCOL))
    kept = replace(result, **{name: getattr(AuditResult(), name) for name in _KEPT})
    (tmp / RESULT).write_bytes(pickle.dumps(kept, protocol=pickle.HIGHEST_PROTOCOL))
    (tmp / INDEX).write_text(json.dumps(writer.index))
    manifest = {"format": FORMAT, "key": place.key, "rmreplay": rmreplay_version(), "checkpoints": len(writer.index)}
    (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")
    try:
        tmp.rename(place.path)
    except OSError:  # stored meanwhile by another process: keep that one
        shutil.rmtree(tmp, ignore_errors=True)


@dataclass(frozen=True)
class Kept:
    """An audit as `stored_audit` hands it over."""

    result: AuditResult
    read: bool  # read from the store (not run now)
    stored: Stored | None  # where it is stored (None: it could not be)


def stored_audit(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, place: Place | None,
                 progress: OnProgress | None = None, start: ReplayStart | None = None) -> Kept:
    """The audit of every cycle of `tables` under `boot`: read from `place` when stored there, else
    run (and stored there when it can be) from `start` (the caller's replay start on `boot`, the
    inputs it holds taken over: `replay_start`'s hold), else from one made here."""
    stored = load(place)
    if stored is not None:
        return Kept(stored.result, True, stored)
    if place is None:
        return Kept(audit(tables, boot, progress=progress, start=start), False, None)
    _remove_leftovers(place.folder)
    tmp = place.folder / temp_name(".tmp-")
    with signals_held():  # a Ctrl-C lands before the sibling is made or inside the `try` that removes it
        writer = _Writer(tmp)
    try:
        # the machines of every cycle first: their working set is gone before the audit's builds up
        start = start or replay_start(tables, boot, hold=True)
        nodes = node_cycles(tables, boot, start.inventory, start.work_orders)
        if resume_points(start.damage):  # audited in parts (gaps): the first cycle's logged decisions are a part's
            writer.takings = takings(start.logged(tables))
        result = audit(tables, boot, progress=progress, checkpoint=writer.add, start=start)
        if writer.close():
            try:
                _finish(tmp, place, result, writer, tables, nodes)
            except OSError:
                pass  # a full disk, a read-only cache: the audit stands, not stored
    finally:
        with signals_held():  # the clean-up is not cut short by the signal that ended the audit's run
            writer.close()
            shutil.rmtree(tmp, ignore_errors=True)
    stored = load(place)  # the result as every later command reads it, its cycles re-entered from the checkpoints
    return Kept(stored.result, False, stored) if stored is not None else Kept(result, False, None)
