"""Where a one-core `rmreplay parse` of a log spends its time, stage by stage.

    python bench/bench_where.py LOG [--json OUT]

Start-up is a whole `rmreplay parse` of the bundled 3-node log (a_tiny: imports and the first
polars calls). The rest is one parse of LOG to Parquet in this process, on one thread, with each
stage's wall and CPU seconds summed over the chunks: reading and cutting chunks, the compiled
scan (lines, headers, routing), the families (templated rows, RmCounter and createState
readers, polars regexes and handlers, lark), the assembly of the chunk's tables, the stitch into
the log's frame, the hand-over to the Parquet writer (Arrow conversion), and the writer thread's
compression and writing (which overlaps the next chunk).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
TINY = ROOT / "fixtures" / "a_tiny" / "rm.log"


def _startup() -> dict:
    rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        subprocess.run([rmreplay, "parse", str(TINY), "-o", tmp, "-j", "1"], check=True, capture_output=True)
        return {"wall_s": time.perf_counter() - start}


def where_time_goes(log: Path) -> dict:
    """{stage: {wall_s, cpu_s}} of one one-core parse of `log` (and the start-up of any parse)."""
    out = {"startup (a_tiny, whole command)": _startup()}
    from replay.cli.process import tune_allocators

    tune_allocators("parse")
    from replay.parsing import pipeline
    from replay.parsing.store import ParquetSink

    spent: dict[str, list[float]] = {}

    def add(stage: str, wall: float, cpu: float) -> None:
        acc = spent.setdefault(stage, [0.0, 0.0])
        acc[0] += wall
        acc[1] += cpu

    def timed(stage: str, fn: Callable) -> Callable:
        def wrapper(*args, **kwargs):
            w, c = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                add(stage, time.perf_counter() - w, time.thread_time() - c)
        return wrapper

    def timed_iter(stage: str, fn: Callable) -> Callable:
        def wrapper(*args, **kwargs) -> Iterator:
            it = iter(fn(*args, **kwargs))
            while True:
                w, c = time.perf_counter(), time.thread_time()
                try:
                    item = next(it)
                except StopIteration:
                    add(stage, time.perf_counter() - w, time.thread_time() - c)
                    return
                add(stage, time.perf_counter() - w, time.thread_time() - c)
                yield item
        return wrapper

    pipeline.stream_chunks = timed_iter("read and cut chunks", pipeline.stream_chunks)
    pipeline.scan_records = timed("scan: lines, headers, routing (C)", pipeline.scan_records)
    pipeline.route = timed("route the rest (polars)", pipeline.route)
    pipeline.parse_families = timed("families: templates, regexes, lark", pipeline.parse_families)
    pipeline.assemble_chunk = timed("assemble the chunk's tables", pipeline.assemble_chunk)
    pipeline.stitch = timed("stitch into the log's frame", pipeline.stitch)
    pipeline.assemble_final = timed("cycles, config, classes, nodepools", pipeline.assemble_final)
    ParquetSink.add = timed("hand over to the writer (Arrow)", ParquetSink.add)
    ParquetSink._write = timed("write Parquet (writer thread, overlaps)", ParquetSink._write)
    with tempfile.TemporaryDirectory() as tmp:
        pipeline.run([str(log)], ParquetSink(tmp), workers=1)  # warm: lark's cache, polars' first calls
        spent.clear()
        w, c = time.perf_counter(), time.process_time()
        sink = ParquetSink(tmp)
        pipeline.run([str(log)], sink, workers=1)
        sink.close()
        total = (time.perf_counter() - w, time.process_time() - c)
    out.update({stage: {"wall_s": v[0], "cpu_s": v[1]} for stage, v in spent.items()})
    out["parse, all stages (wall; CPU of every thread)"] = {"wall_s": total[0], "cpu_s": total[1]}
    return out


def main() -> int:
    """Print (and optionally save) the breakdown."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    got = where_time_goes(args.log)
    print(json.dumps(got, indent=2))
    if args.json:
        args.json.write_text(json.dumps(got, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
