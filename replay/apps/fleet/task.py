"""One stream's task, run on a Dask worker: hash, parse (and audit), move into the dataset.

The task is idempotent: it works in its own staging folder and moves a stream's files into the
dataset only when all of them are written, replacing the stream's previous files; the client
writes the manifest row from the value it returns. A worker lost midway leaves only a staging
folder, and Dask runs the task again elsewhere. A stream that cannot be parsed comes back as a
`failed` row with its one-line error, and the rest go on.
"""

from __future__ import annotations

import dataclasses
import re
from collections import ChainMap
from collections.abc import Mapping
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from replay.apps.audit import audit, write_audit
from replay.apps.fleet.dataset import Row, publish, staging
from replay.apps.fleet.streams import Stream, content_hash, expected_bytes, local_files
from replay.model.reads import audit_columns
from replay.parsing.pipeline import Summary, run
from replay.parsing.records import parse_ts
from replay.parsing.sources import InputError
from replay.parsing.store import ParquetSink, ParquetTables
from replay.progress import Progress

TOPIC = "rmreplay-progress"  # the worker events the client's progress display subscribes to
EMIT_EVERY = 0.25  # seconds between a task's progress events
STAGED = "unpacked"  # where a task unpacks an archive's members


@dataclass(frozen=True)
class Job:
    """What the client asks of one task: the stream, where the dataset is, whether to audit,
    the hash it already holds for the stream (equal: nothing to do), and the parse threads."""

    stream: Stream
    dataset: str
    audit: bool
    known_hash: str | None = None
    threads: int = 1
    config: str | None = None  # the cluster's DUCC resources directory (`--config NAME=DIR`)


def process_stream(job: Job) -> Row:
    """Run one stream's task; the manifest row (`status`: ok, failed, or skipped: hash known)."""
    stream = job.stream
    emit = _Emitter(stream.key)
    row = {"cluster": stream.cluster, "stream": stream.name, "files": list(stream.members), "hash": None,
           "status": "failed", "error": None, "audited": False}
    try:
        row["hash"] = content_hash(stream)
        if row["hash"] == job.known_hash:
            return {**row, "status": "skipped"}
        emit.start(expected_bytes(stream))
        dataset = Path(job.dataset)
        with tempfile.TemporaryDirectory(dir=staging(dataset), prefix="task-") as tmp:
            work = Path(tmp)
            files = local_files(stream, work / STAGED)
            sink = ParquetSink(work / "tables")
            summary = run([str(f) for f in files], sink, workers=job.threads, progress=emit)
            sink.close()
            row.update(_summary_fields(summary), status="ok")
            audit_dir = None
            if job.audit:
                audit_dir, audited = _audit(work, emit, job.config)
                row.update(audited)
            publish(dataset, stream.cluster, stream.name, work / "tables", audit_dir)
    except InputError as exc:
        row["error"] = _named(str(exc), stream)
    except Exception as exc:  # a bug or a broken file: recorded for this stream, the fleet goes on
        row["error"] = _named(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}", stream)
    return row


def _named(error: str, stream: Stream) -> str:
    """The error on one line, an archive member named as archive:member (not where it was unpacked)."""
    error = " ".join(error.split())
    if stream.archived:
        where = re.compile(r"\S*/" + re.escape(STAGED) + r"/([^\s:]+)")
        error = where.sub(lambda m: f"{stream.container}:{_member(stream, m[1])}", error)
    return error


def _member(stream: Stream, leaf: str) -> str:
    return next((m for m in stream.members if m.rsplit("/", 1)[-1] == leaf), leaf)


def _audit(work: Path, emit: _Emitter, config: str | None = None) -> tuple[Path | None, Row]:
    """Audit the parsed tables (read back column by column, as `rmreplay audit` does); a stream
    whose bootstrap rolled away takes it from the cluster's `config` directory."""
    tables: Mapping[str, pl.DataFrame] = ParquetTables(work / "tables", audit_columns())
    if config and (tables["classes"].is_empty() or tables["nodepools"].is_empty()):
        from replay.model.resources import read_resources

        tables = ChainMap(read_resources(Path(config)), tables)  # type: ignore[arg-type]
    try:
        result = audit(tables, progress=emit)
    except InputError as exc:  # no bootstrap in the stream: its tables still stand
        return None, {"error": f"not audited: {exc}"}
    out = work / "audit"
    write_audit(result, out)
    report = result.report()
    return out, {"audited": True, "audit_cycles": report["cycles_audited"], "cycles_agree": report["cycles_agree"],
                 "divergences": len(result.divergences)}


def _summary_fields(summary: Summary) -> Row:
    """The manifest's numbers from the parse summary (times as datetimes)."""
    stamps = pl.select(parse_ts(pl.lit(pl.Series([summary.first_ts, summary.last_ts], dtype=pl.String)))).to_series()
    return {"bytes": summary.bytes, "lines": summary.lines, "unparsed": summary.unparsed, "cycles": summary.cycles,
            "first_ts": stamps[0], "last_ts": stamps[1]}


class _Emitter:
    """A task's `OnProgress`: its progress as events to the client that subscribed to TOPIC (no-op
    off a worker); `{"key", "start": expected bytes}` first, then `{"key", **Progress fields}` at
    most every EMIT_EVERY seconds within a stage (a stage's first and last always go)."""

    def __init__(self, key: str):
        self.key = key
        self.last = 0.0
        self.worker: Any = None
        try:
            from distributed import get_worker

            self.worker = get_worker()
        except (ImportError, ValueError):
            pass

    def start(self, expected: int) -> None:
        """The task begins: its bar's size."""
        if self.worker is not None:
            self.worker.log_event(TOPIC, {"key": self.key, "start": expected})

    def __call__(self, progress: Progress) -> None:
        now = time.monotonic()
        edge = progress.done == 0 or progress.done == progress.total
        if self.worker is None or (not edge and now - self.last < EMIT_EVERY):
            return
        self.last = now
        self.worker.log_event(TOPIC, {"key": self.key, **dataclasses.asdict(progress)})
