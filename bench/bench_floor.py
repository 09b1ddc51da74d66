"""The floor of a parse: what its fixed parts cost alone, beside lnav indexing the same log.

    python bench/bench_floor.py LOG [--runs N] [--json OUT]

Every figure is CPU seconds (user + system; a shared machine stretches wall time more), the
median of `--runs` (default 3); in this process:
- `read`: reading and cutting the log into chunks (replay.parsing.chunks), nothing else;
- `c_scanner`: every call into the compiled scanner (`replay.parsing._scan`: each function it
  exports, the columns it types included) during a one-core parse, summed: the per-record work
  already in C (`c_scanner_scan`: the scan's part of it alone, lines, views, route, fill, rmcounter,
  schedule, occupancy and sections, as earlier versions of this bench counted it);
- `parquet_writer`: pyarrow's Parquet writer alone, writing the parse's final tables (read back
  from a parse of LOG, one row group per chunk as the parse writes them) with the parse's options;
- `parse_in_process`: the whole one-core parse in this process (no start-up; CPU of every thread,
  polars' pool included, the writer waited for after each chunk);
- `import_floor`: a process that imports only what a parse whose per-record work is compiled
  needs (numpy, pyarrow.parquet and the scanner: no polars, no lark, no rmref);
and in their own processes (`*_wall`: their wall seconds too): `startup`, `rmreplay parse` of
the 3-node a_tiny log (interpreter, imports, first polars calls), and `lnav_index` on LOG. The floor of a
design whose per-record work is all compiled, if its scanner cost no more than today's: on one
core import_floor + read + c_scanner + parquet_writer; on two, the writer on its own thread,
import_floor + max(read + c_scanner, parquet_writer), and with the work split perfectly between
the two, import_floor + (read + c_scanner + parquet_writer) / 2.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_parse import compile_bytecode  # noqa: E402 (after the path insert)

TINY = ROOT / "fixtures" / "a_tiny" / "rm.log"
# the scan's calls, as this bench counted the compiled work before it timed every call
SCAN_CALLS = ("lines", "views", "route", "fill", "rmcounter", "schedule", "occupancy", "sections")
# the extension loaded by its path: `import replay.parsing._scan` runs replay/__init__, which
# imports the whole pipeline (polars, lark)
IMPORT_FLOOR = ("import importlib.util as u, sys, numpy, pyarrow.parquet; "
                "u.module_from_spec(u.spec_from_file_location('_scan', sys.argv[1]))")


def _child(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of `cmd` in its own process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"bench: {' '.join(cmd)} failed")
    return time.perf_counter() - start, usage.ru_utime + usage.ru_stime


def _cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def _scan_path() -> str:
    from replay.parsing import _scan

    return str(_scan.__file__)


def _read(log: Path) -> None:
    from replay.parsing.chunks import stream_chunks
    from replay.parsing.logdir import find_inputs
    from replay.parsing.pipeline import DEFAULT_CHUNK_BYTES

    for _ in stream_chunks(find_inputs([str(log)]).sources, DEFAULT_CHUNK_BYTES):
        pass


def _scanner_seconds(log: Path, out: Path) -> tuple[dict[str, float], float]:
    """({_scan function: CPU seconds inside it}, CPU seconds of the whole parse, every thread) of
    one one-core parse of `log` to Parquet in `out`, the writer waited for after each chunk."""
    from replay.parsing import _scan, pipeline
    from replay.parsing.store import ParquetSink

    spent: dict[str, float] = {}
    names = [n for n in dir(_scan) if not n.startswith("_") and n[0].islower() and callable(getattr(_scan, n))]
    originals = {name: getattr(_scan, name) for name in names}

    def timed(name: str, fn: Callable) -> Callable:
        def wrapper(*args):
            start = time.thread_time()
            try:
                return fn(*args)
            finally:
                spent[name] = spent.get(name, 0.0) + time.thread_time() - start
        return wrapper

    class SyncSink(ParquetSink):
        def add(self, tables):  # the writer on this thread: its CPU counts here too
            super().add(tables)
            self._wait()

    for name, fn in originals.items():
        setattr(_scan, name, timed(name, fn))
    try:
        start = time.process_time()
        sink = SyncSink(out)
        pipeline.run([str(log)], sink, workers=1)
        sink.close()
        total = time.process_time() - start
    finally:
        for name, fn in originals.items():
            setattr(_scan, name, fn)
    return spent, total


def _writer_seconds(parsed: Path, out: Path) -> float:
    """CPU seconds of pyarrow's Parquet writer alone writing the tables of `parsed` again, row
    group by row group, with the parse's options."""
    import pyarrow.parquet as pq

    from replay.parsing.store import write_options

    tables = {}
    for path in sorted(parsed.glob("*.parquet")):
        pf = pq.ParquetFile(path)
        tables[path.name] = (pf.schema_arrow, [pf.read_row_group(i) for i in range(pf.num_row_groups)])

    def write() -> None:
        for name, (schema, groups) in tables.items():
            with pq.ParquetWriter(out / name, schema, **write_options(schema)) as writer:
                for group in groups:
                    writer.write_table(group)

    return _cpu(write)


def floor(log: Path, runs: int) -> dict:
    """The figures above, medians of `runs`."""
    from replay.cli.process import tune_allocators

    tune_allocators("parse")
    rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
    got: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "parsed").mkdir()
        (tmp / "again").mkdir()
        _scanner_seconds(log, tmp / "parsed")  # warm: page cache, lark's cache, polars' first calls
        for _ in range(runs):
            children = {"startup": [rmreplay, "parse", str(TINY), "-o", str(tmp / "tiny"), "-j", "1", "--force"],
                        "import_floor": [sys.executable, "-c", IMPORT_FLOOR, _scan_path()]}
            if shutil.which("lnav"):
                children["lnav_index"] = ["lnav", "-n", "-c", ";SELECT count(*) FROM all_logs", str(log)]
            for name, cmd in children.items():
                wall, cpu = _child(cmd)
                got.setdefault(f"{name}_wall", []).append(wall)
                got.setdefault(name, []).append(cpu)
            got.setdefault("read", []).append(_cpu(lambda: _read(log)))
            scanner, total = _scanner_seconds(log, tmp / "parsed")
            got.setdefault("c_scanner", []).append(sum(scanner.values()))
            got.setdefault("c_scanner_scan", []).append(sum(scanner.get(n, 0.0) for n in SCAN_CALLS))
            for name, seconds in scanner.items():
                got.setdefault(f"c_scanner.{name}", []).append(seconds)
            got.setdefault("parse_in_process", []).append(total)
            got.setdefault("parquet_writer", []).append(_writer_seconds(tmp / "parsed", tmp / "again"))
    size = log.stat().st_size
    out: dict = {"file_mb": size / 1e6, "runs": runs}
    for name, values in got.items():
        med = statistics.median(values)
        out[name] = {"median_seconds": med, "min_seconds": min(values), "mb_s": size / 1e6 / med}
    med = {name: out[name]["median_seconds"] for name in got}
    # one core: everything in turn; two: the writer beside the scan (as the parse's writer thread)
    out["floor_one_core_seconds"] = med["import_floor"] + med["read"] + med["c_scanner"] + med["parquet_writer"]
    out["floor_two_cores_seconds"] = med["import_floor"] + max(med["read"] + med["c_scanner"], med["parquet_writer"])
    # two cores, the work split perfectly (chunks scanned on both, the writer between them)
    out["floor_two_cores_split_seconds"] = med["import_floor"] + (
        med["read"] + med["c_scanner"] + med["parquet_writer"]) / 2
    if "lnav_index" in out:
        out["floor_two_cores_split_x_lnav"] = med["lnav_index"] / out["floor_two_cores_split_seconds"]
        out["floor_one_core_x_lnav"] = med["lnav_index"] / out["floor_one_core_seconds"]
        out["floor_two_cores_x_lnav"] = med["lnav_index"] / out["floor_two_cores_seconds"]
        out["parse_in_process_x_lnav"] = out["lnav_index"]["median_seconds"] / out["parse_in_process"]["median_seconds"]
    return out


def main() -> int:
    """Print (and optionally save) the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    compile_bytecode()
    got = floor(args.log, args.runs)
    print(json.dumps(got, indent=2))
    if args.json:
        args.json.write_text(json.dumps(got, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
