"""`rmreplay fleet SOURCES... -o DATASET [--workers N | --scheduler ADDRESS] [--audit]`."""

from __future__ import annotations

import argparse
import logging
import warnings
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from replay.apps.fleet.dataset import manifest_row, write_manifest
from replay.apps.fleet.progress import FleetProgress
from replay.apps.fleet.run import FleetResult, build_dataset, dask_client
from replay.apps.fleet.streams import Skipped, fleet_sources
from replay.apps.fleet.task import TOPIC
from replay.parsing.limits import available_cores
from replay.parsing.sources import InputError

NO_DASK = "fleet runs on Dask, which is not installed: pip install 'rmreplay[fleet]'"


def cmd_fleet(args: argparse.Namespace, console: Console) -> int:
    """Build (or bring up to date) the dataset; exit 1 when a stream failed in this run."""
    if find_spec("distributed") is None:  # an extra: `pip install 'rmreplay[fleet]'`
        raise InputError(NO_DASK)
    streams, left_out = fleet_sources(args.sources)
    configs = cluster_configs(args.config or [], {s.cluster for s in streams})
    workers = args.workers or available_cores()
    # a task's parse takes the cores its worker leaves free on this machine (none with a scheduler)
    threads = 1 if args.scheduler else max(1, available_cores() // workers)
    logging.getLogger("distributed").setLevel(logging.ERROR)  # Dask's own chatter: the bars say it
    warnings.filterwarnings("ignore", module="distributed")
    clusters = len({s.cluster for s in streams})
    with dask_client(workers, args.scheduler) as (client, dashboard):
        where = args.scheduler or f"a local Dask cluster of {workers} worker(s)"
        console.print(f"{len(streams):,} stream(s) of {clusters:,} cluster(s) on {where}", highlight=False)
        console.print(f"Dask dashboard: {dashboard}" if dashboard else
                      "no Dask dashboard (pip install bokeh for one)", highlight=False)
        with FleetProgress(console, len(streams)) as bars:
            client.subscribe_topic(TOPIC, bars.event)
            def done(row: dict[str, Any]) -> None:
                bars.finished(f"{row['cluster']}/{row['stream']}", row["status"], (row.get("bytes") or 0) / 1e6)

            result = build_dataset(streams, Path(args.out), client, audit=args.audit, retry_failed=args.retry_failed,
                                   threads=threads, on_result=done, configs=configs)
            client.unsubscribe_topic(TOPIC)
    record_skipped(Path(args.out), result, left_out)
    console.print(fleet_table(result))
    console.print(fleet_line(result), highlight=False)
    for s in left_out:
        console.print(f"  skipped {s.cluster}/{s.name}: {s.reason}", markup=False, highlight=False)
    for row in result.failed:
        console.print(Text.assemble(("  failed ", "red"), f"{row['cluster']}/{row['stream']}: {row['error']}"))
    return 1 if result.failed else 0


def cluster_configs(items: list[str], clusters: set[str]) -> dict[str, str]:
    """`--config NAME=DIR` values as cluster -> directory; InputError for an unknown cluster or directory."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, folder = item.partition("=")
        if not sep or not name or not folder:
            raise InputError(f"--config {item!r}: expected NAME=DIR (a cluster's name, its DUCC resources directory)")
        if name not in clusters:
            raise InputError(f"--config {item!r}: no cluster {name!r} among the sources "
                             f"({', '.join(sorted(clusters))})")
        if not Path(folder).is_dir():
            raise InputError(f"--config {item!r}: {folder} is not a directory")
        out[name] = str(Path(folder).resolve())
    return out


def record_skipped(dataset: Path, result: FleetResult, left_out: list[Skipped]) -> None:
    """The rolled sets left out, in the manifest as `skipped` with the reason (not failed)."""
    if not left_out:
        return
    for s in left_out:
        result.manifest[(s.cluster, s.name)] = manifest_row({
            "cluster": s.cluster, "stream": s.name, "files": list(s.members), "status": "skipped",
            "note": s.reason, "audited": False})
    write_manifest(dataset, result.manifest)


def fleet_table(result: FleetResult) -> Table:
    """Per cluster: streams by outcome, MB, cycles (and cycles that agree with rmref)."""
    table = Table(title="rmreplay fleet", box=None, pad_edge=False)
    for name, justify in (("cluster", "left"), ("streams", "right"), ("parsed", "right"), ("skipped", "right"),
                          ("failed", "right"), ("MB", "right"), ("cycles", "right"), ("cycles agree", "right")):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    clusters = sorted({c for c, _ in result.manifest})
    skipped = {(r["cluster"], r["stream"]) for r in result.skipped}
    done = {(r["cluster"], r["stream"]) for r in result.done if r["status"] == "ok"}
    for cluster in clusters:
        rows = [r for (c, _), r in result.manifest.items() if c == cluster]
        audited = [r for r in rows if r["audited"]]
        table.add_row(
            cluster, f"{len(rows):,}", f"{sum((cluster, r['stream']) in done for r in rows):,}",
            f"{sum((cluster, r['stream']) in skipped for r in rows):,}",
            f"{sum(r['status'] == 'failed' for r in rows):,}", f"{sum(r['bytes'] or 0 for r in rows) / 1e6:,.1f}",
            f"{sum(r['cycles'] or 0 for r in rows):,}",
            f"{sum(r['cycles_agree'] or 0 for r in audited):,} of {sum(r['audit_cycles'] or 0 for r in audited):,}"
            if audited else "-")
    return table


def fleet_line(result: FleetResult) -> str:
    """This run in one line: what it did and how fast."""
    mb = sum(r.get("bytes") or 0 for r in result.done) / 1e6
    secs = max(result.seconds, 1e-9)
    return (f"{len(result.done):,} stream(s) parsed ({len(result.failed):,} failed), {len(result.skipped):,} "
            f"already in the dataset; {mb:,.1f} MB in {result.seconds:.1f} s ({mb / secs:,.1f} MB/s, "
            f"{len(result.done) / secs:,.2f} streams/s)")
