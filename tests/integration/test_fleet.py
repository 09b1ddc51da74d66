"""`rmreplay fleet` on a Dask LocalCluster of 2 worker processes, over every bundled log.

The clusters: `info` (a folder per scenario holding its INFO log, i_mega24 too), `debug` (an
archive holding every DEBUG log), `rolled` (h_mega15's log cut into a rolled, gzipped set) and
`junk` (random bytes named rm.log). Ground truth for each stream is `rmreplay parse -o` (and
`rmreplay audit -o`) of the same files on their own: the dataset's part files must be those
files, byte for byte, whatever happens to the workers.
"""

from __future__ import annotations

import gzip
import os
import shutil
import signal
import tarfile
import threading
import time
from pathlib import Path

import duckdb
import polars as pl
import pytest

from replay.apps.fleet import build_dataset, fleet_streams, read_manifest, scan_table
from replay.apps.fleet.dataset import AUDIT_TABLES, MANIFEST, part_path
from replay.cli import main
from replay.parsing.tables import SCHEMAS
from tests.helpers import FIXTURES, SCENARIOS, log_path
from tests.integration.test_rotation import _roll

distributed = pytest.importorskip("distributed")

ROLLED_PIECE = 512 * 1024


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, Path]:
    """cluster name -> its source (a folder, or the debug archive)."""
    root = tmp_path_factory.mktemp("sources")
    info = root / "info"
    for name in [*SCENARIOS, "i_mega24"]:
        src = log_path(name)
        (info / name).mkdir(parents=True)
        os.symlink(src, info / name / src.name)
    staged = root / "staged"
    for name in SCENARIOS:
        src = log_path(name, "rm-debug.log")
        (staged / name).mkdir(parents=True)
        shutil.copy(src, staged / name / src.name)
    debug = root / "debug.tar.gz"
    with tarfile.open(debug, "w:gz") as tf:
        tf.add(staged, arcname=".")
    rolled = root / "rolled"
    rolled.mkdir()
    assert len(_roll(gzip.decompress(log_path("h_mega15").read_bytes()), rolled, ROLLED_PIECE)) > 3
    junk = root / "junk"
    junk.mkdir()
    (junk / "rm.log").write_bytes(os.urandom(200_000))
    return {"info": info, "debug": debug, "rolled": rolled, "junk": junk}


@pytest.fixture(scope="module")
def client():
    """A LocalCluster of 2 single-threaded worker processes (with nannies, which restart them)."""
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def built(sources, client, tmp_path_factory):
    """(dataset, streams, result) of one fleet run over every source."""
    dataset = tmp_path_factory.mktemp("fleet") / "dataset"
    streams = fleet_streams([str(p) for p in sources.values()])
    return dataset, streams, build_dataset(streams, dataset, client)


@pytest.fixture(scope="module")
def references(sources, tmp_path_factory) -> dict[tuple[str, str], Path]:
    """(cluster, stream) -> `rmreplay parse -o` of its files, run on their own."""
    out = {}
    root = tmp_path_factory.mktemp("reference")
    unpacked = root / "debug"
    with tarfile.open(sources["debug"]) as tf:
        tf.extractall(unpacked, filter="data")
    for cluster, folder in (("info", sources["info"]), ("debug", unpacked)):
        for scenario in sorted(p.name for p in folder.iterdir()):
            out[(cluster, f"{scenario}/{'rm.log' if cluster == 'info' else 'rm-debug.log'}")] = folder / scenario
    out[("rolled", "rm.log")] = sources["rolled"]
    tables = {}
    for (cluster, stream), path in out.items():
        dest = root / cluster / stream.replace("/", "_")
        assert main(["parse", str(path), "-o", str(dest), "-j", "1"]) == 0
        tables[(cluster, stream)] = dest
    return tables


def _files(dataset: Path) -> dict[str, tuple[int, bytes]]:
    return {str(p.relative_to(dataset)): (p.stat().st_mtime_ns, p.read_bytes()) for p in sorted(dataset.rglob("*"))
            if p.is_file()}


def test_streams_are_found_per_cluster(built):
    _, streams, _ = built
    keys = {s.key for s in streams}
    assert {f"info/{n}/rm.log" for n in [*SCENARIOS, "i_mega24"]} <= keys
    assert {f"debug/{n}/rm-debug.log" for n in SCENARIOS} <= keys
    assert "rolled/rm.log" in keys and "junk/rm.log" in keys
    assert len(keys) == len(SCENARIOS) * 2 + 3
    rolled = next(s for s in streams if s.key == "rolled/rm.log")
    assert rolled.members[-1] == "rm.log" and rolled.members[0].endswith(".gz")  # oldest first


def test_every_stream_lands_as_its_own_parse(built, references, capsys):
    dataset, streams, result = built
    capsys.readouterr()
    manifest = read_manifest(dataset)
    assert manifest.height == len(streams)  # one row per stream
    for (cluster, stream), ref in references.items():
        row = manifest.filter((pl.col("cluster") == cluster) & (pl.col("stream") == stream)).row(0, named=True)
        assert row["status"] == "ok", (cluster, stream, row["error"])
        assert row["cycles"] == pl.read_parquet(ref / "cycles.parquet").height
        for table in SCHEMAS:
            assert part_path(dataset, table, cluster, stream).read_bytes() == (ref / f"{table}.parquet").read_bytes(), \
                (cluster, stream, table)


def test_the_dataset_reads_whole_with_cluster_and_stream(built, references):
    dataset, _, _ = built
    cycles = scan_table(dataset, "cycles").collect()
    assert {"cluster", "stream"} <= set(cycles.columns)
    assert cycles.height == sum(pl.read_parquet(ref / "cycles.parquet").height for ref in references.values())
    per_cluster = dict(duckdb.sql(f"SELECT cluster, count(*) FROM read_parquet('{dataset}/cycles/**/*.parquet', "
                                  "hive_partitioning = true) GROUP BY cluster").fetchall())
    assert per_cluster == {c: n for c, n in cycles.group_by("cluster").len().iter_rows()}


def test_a_garbage_stream_is_recorded_as_failed_and_the_others_land(built):
    dataset, _, result = built
    manifest = read_manifest(dataset)
    junk = manifest.filter(pl.col("cluster") == "junk").row(0, named=True)
    assert junk["status"] == "failed" and "not an rm.log" in junk["error"] and "\n" not in junk["error"]
    assert junk["hash"] is not None
    assert not part_path(dataset, "cycles", "junk", "rm.log").exists()
    assert manifest.filter(pl.col("status") == "ok").height == manifest.height - 1
    assert [r["cluster"] for r in result.failed] == ["junk"]


def test_a_second_run_writes_nothing_new(built, client):
    dataset, streams, _ = built
    before = _files(dataset)
    again = build_dataset(streams, dataset, client)
    assert again.done == [] and len(again.skipped) == len(streams)
    assert _files(dataset) == before  # not one file rewritten, the manifest included


def _busy(client, key_part: str) -> list[str]:
    """The workers running a task whose key holds `key_part`."""
    return [w for w, keys in client.processing().items() if any(key_part in str(k) for k in keys)]


def _while_running(client, key_part: str, after: float, action) -> tuple[threading.Thread, list]:
    """Call `action(worker)` once a task whose key holds `key_part` has run `after` seconds (and
    still runs); the list gets the worker it was done to."""
    done: list = []

    def watch() -> None:
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline and not _busy(client, key_part):
            time.sleep(0.05)
        time.sleep(after)
        busy = _busy(client, key_part)
        if busy:
            action(busy[0])
            done.append(busy[0])

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread, done


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(built, client, tmp_path):
    dataset, streams, _ = built
    again = tmp_path / "dataset"

    def kill(worker: str) -> None:  # SIGKILL the worker process; its nanny starts a new one
        os.kill(client.run(os.getpid, workers=[worker])[worker], signal.SIGKILL)

    watcher, killed = _while_running(client, "i_mega24", 1.0, kill)
    result = build_dataset(streams, again, client)
    watcher.join()
    assert killed, "the i_mega24 task ended before the worker could be killed"
    assert [r["cluster"] for r in result.failed] == ["junk"]
    # the same files as the undisturbed run's (a stream's files are replaced whole: no duplicates)
    assert {k: v for k, (_, v) in _files(again).items()} == {k: v for k, (_, v) in _files(dataset).items()}


def test_a_restarted_cluster_still_yields_the_complete_dataset(built, client, tmp_path):
    dataset, streams, _ = built
    again = tmp_path / "dataset"
    wanted = [s for s in streams if s.cluster in ("rolled", "info")]
    # not waiting for the nannies' new workers (on a loaded 2-core machine one took over 600 s to
    # connect): the dataset must be complete with whichever workers come back
    watcher, restarted = _while_running(client, "i_mega24", 0.5,
                                        lambda _worker: client.restart(timeout=600, wait_for_workers=False))
    result = build_dataset(wanted, again, client)
    watcher.join()
    assert restarted, "the i_mega24 task ended before the cluster could be restarted"
    assert result.failed == [] and len(result.done) == len(wanted)
    for s in wanted:
        for table in SCHEMAS:
            assert part_path(again, table, s.cluster, s.name).read_bytes() == \
                part_path(dataset, table, s.cluster, s.name).read_bytes()


def test_the_command_audits_each_stream_as_rmreplay_audit_does(tmp_path, capsys):
    folder = tmp_path / "prod"
    for name in ("a_tiny", "d_fragmentation"):
        (folder / name).mkdir(parents=True)
        shutil.copy(log_path(name), folder / name)
    dataset = tmp_path / "dataset"
    assert main(["fleet", f"prod={folder}", "-o", str(dataset), "--workers", "1", "--audit"]) == 0
    out = capsys.readouterr().out
    assert "2 stream(s) of 1 cluster(s)" in out and "rmreplay fleet" in out
    manifest = read_manifest(dataset)
    assert manifest["audited"].to_list() == [True, True]
    for name in ("a_tiny", "d_fragmentation"):
        ref = tmp_path / f"audit-{name}"
        main(["audit", str(log_path(name)), "-o", str(ref)])
        stream = f"{name}/{log_path(name).name.removesuffix('.gz')}"
        for table in AUDIT_TABLES:
            assert part_path(dataset, table, "prod", stream).read_bytes() == (ref / f"{table}.parquet").read_bytes()
    capsys.readouterr()
    # asking for the audit again changes nothing; a stream parsed without it is audited when asked
    assert main(["fleet", f"prod={folder}", "-o", str(dataset), "--workers", "1", "--audit"]) == 0
    assert "0 stream(s) parsed (0 failed), 2 already in the dataset" in capsys.readouterr().out.replace("\n", " ")
    assert (dataset / MANIFEST).exists()


def test_bad_sources_are_one_line_errors(tmp_path, capsys):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "rm.log").write_text("x\n")
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "empty").mkdir()
    for argv, message in (
        ([str(tmp_path / "missing")], "no such file or directory"),
        ([str(tmp_path / "notes.txt")], "not a directory or an archive"),
        ([str(tmp_path / "empty")], "holds no *.log"),
        ([f"x={tmp_path / 'a'}", f"x={tmp_path / 'a'}"], "cluster 'x' is also"),
        ([f"9lives={tmp_path / 'a'}"], "must start with a letter"),
    ):
        assert main(["fleet", *argv, "-o", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1, err


def test_the_content_hash_follows_the_bytes(tmp_path):
    (tmp_path / "c").mkdir()
    log = tmp_path / "c" / "rm.log"
    shutil.copy(FIXTURES / "a_tiny" / "rm.log", log)
    from replay.apps.fleet.streams import content_hash

    first = content_hash(fleet_streams([str(tmp_path / "c")])[0])
    assert first == content_hash(fleet_streams([f"other={tmp_path / 'c'}"])[0])  # the bytes, not the names
    data = bytearray(log.read_bytes())
    data[1000] ^= 1
    log.write_bytes(bytes(data))
    assert content_hash(fleet_streams([str(tmp_path / "c")])[0]) != first
