"""The fleet on Dask, client side: a task per stream, the manifest kept as results come in.

Each stream is submitted once (`process_stream` on a worker). A worker lost while running a
task is Dask's to handle (it runs the task again, up to `distributed.scheduler.allowed-failures`
times); a task Dask gives up on (KilledWorker) is recorded as failed, with the reason; tasks a
`Client.restart` cancelled are submitted again. The manifest is rewritten after every finished
stream, so an interrupted run keeps what it did, and a second run skips what is there.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING

from replay.apps.fleet.dataset import Row, clear_staging, manifest_row, read_manifest, write_manifest
from replay.apps.fleet.streams import Stream
from replay.apps.fleet.task import Job, process_stream

if TYPE_CHECKING:  # Dask loads only for `rmreplay fleet`
    from distributed import Client, Future

RESUBMITS = 3  # a task cancelled by a restart is submitted again at most this often


@dataclass
class FleetResult:
    """What one run did: the manifest after it, and this run's rows by outcome."""

    manifest: dict[tuple[str, str], Row]
    done: list[Row] = field(default_factory=list)  # ok or failed this run
    skipped: list[Row] = field(default_factory=list)  # hash already in the dataset
    seconds: float = 0.0

    @property
    def failed(self) -> list[Row]:
        """This run's failed streams."""
        return [r for r in self.done if r["status"] == "failed"]


def _reusable(old: Row | None, audit: bool, retry_failed: bool) -> str | None:
    """The hash a stream's old row lets a task skip on (None: run it whatever its hash)."""
    if old is None or old["hash"] is None:
        return None
    if old["status"] == "failed" and retry_failed:
        return None
    # an audit asked for and not yet tried (an audit that could not run says why in `error`)
    if audit and old["status"] == "ok" and not old["audited"] and not old["error"]:
        return None
    return str(old["hash"])


def build_dataset(streams: list[Stream], dataset: Path, client: Client, *, audit: bool = False,
                  retry_failed: bool = False, threads: int = 1,
                  on_result: Callable[[Row], None] | None = None,
                  configs: Mapping[str, str] | None = None) -> FleetResult:
    """Parse (and audit) every stream on the client's cluster into `dataset` (`configs`: cluster ->
    its DUCC resources directory, for streams whose bootstrap rolled away)."""
    from distributed import as_completed
    from distributed.client import FutureCancelledError

    start = time.perf_counter()
    dataset.mkdir(parents=True, exist_ok=True)
    clear_staging(dataset)
    manifest = {(r["cluster"], r["stream"]): r for r in read_manifest(dataset).iter_rows(named=True)}
    result = FleetResult(manifest)
    resubmits: dict[str, int] = {}

    def submit(job: Job) -> Future[Row]:
        # pure=False: a unique key, so a resubmitted task is a new one
        return client.submit(process_stream, job, key=f"rmreplay-{job.stream.key}-{uuid.uuid4().hex[:8]}",
                             pure=False)

    jobs = [Job(s, str(dataset), audit, _reusable(manifest.get((s.cluster, s.name)), audit, retry_failed), threads,
                (configs or {}).get(s.cluster)) for s in streams]
    pending = {submit(job): job for job in jobs}
    queue = as_completed(list(pending))
    for future in queue:
        job = pending.pop(future)
        try:
            row = future.result()
        except FutureCancelledError:  # a restart forgot it: the stream is not done
            resubmits[job.stream.key] = resubmits.get(job.stream.key, 0) + 1
            if resubmits[job.stream.key] <= RESUBMITS:
                again = submit(job)
                pending[again] = job
                queue.add(again)
                continue
            row = _failed(job.stream, "cancelled again and again (the cluster was restarted while it ran)")
        except Exception as exc:  # KilledWorker: every worker that ran it died
            row = _failed(job.stream, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
                                      "(workers died running it: out of memory? see the worker logs)")
        future.release()
        row = manifest_row(row) if row["status"] != "skipped" else row
        if row["status"] == "skipped":
            result.skipped.append(row)
        else:
            manifest[(row["cluster"], row["stream"])] = row
            write_manifest(dataset, manifest)
            result.done.append(row)
        if on_result is not None:
            on_result(row)
    clear_staging(dataset)
    result.seconds = time.perf_counter() - start
    return result


def _failed(stream: Stream, error: str) -> Row:
    return {"cluster": stream.cluster, "stream": stream.name, "files": list(stream.members), "hash": None,
            "status": "failed", "error": error, "audited": False}


def has_dashboard() -> bool:
    """Whether Dask can serve its dashboard here (it needs bokeh)."""
    return find_spec("bokeh") is not None


@contextmanager
def dask_client(workers: int | None, scheduler: str | None) -> Iterator[tuple[Client, str | None]]:
    """(client, dashboard address or None): a running scheduler's, or a LocalCluster of
    `workers` processes of one thread each (the parse runs a stream per worker)."""
    from distributed import Client, LocalCluster

    if scheduler:
        with Client(scheduler) as client:
            yield client, client.dashboard_link if has_dashboard() else None
        return
    # the worker processes inherit this process's environment: the console script's allocator
    # settings (replay/cli/process.py) reach them that way
    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                      dashboard_address=":8787" if has_dashboard() else None) as cluster, \
            Client(cluster) as client:
        yield client, cluster.dashboard_link if has_dashboard() else None
