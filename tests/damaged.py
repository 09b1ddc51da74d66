"""Damaged copies of a bundled log, as support engineers receive them: garbage lines, a run of NUL
bytes inside a line, a rolled set with a member lost, the folder packed into an archive.

Every copy is made from the fixture's own lines (no line is invented except the garbage), so
the clean log's audit is the ground truth for every cycle the damage does not touch: truth.jsonl
says the real RM agreed with itself in all of them.
"""

from __future__ import annotations

import gzip
import io
import random
import tarfile
import zipfile
from pathlib import Path

from tests.helpers import log_path, truth

NAME = "h_mega15"  # mid-sized (123 cycles, 53 nodes, defragmentation): damage lands in busy cycles
GARBAGE = ("%%%% corrupted %%%%", "@@\x7f@@ ###", "]]]]}}}}", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")


def lines(name: str = NAME) -> list[bytes]:
    """The fixture's INFO log, line by line (each with its newline)."""
    data = log_path(name).read_bytes()
    return (gzip.decompress(data) if log_path(name).suffix == ".gz" else data).splitlines(keepends=True)


def garbage(out: Path, n: int = 30, seed: int = 7) -> tuple[Path, list[int]]:
    """`n` garbage lines inserted at random places (some inside multi-line records); returns the
    file and the 1-based line numbers of the garbage in it."""
    src = lines()
    rng = random.Random(seed)
    at = sorted(rng.sample(range(2000, len(src)), n))
    out_lines: list[bytes] = []
    numbers = []
    prev = 0
    for i in at:
        out_lines += src[prev:i]
        out_lines.append((rng.choice(GARBAGE) + "\n").encode())
        numbers.append(len(out_lines))
        prev = i
    out_lines += src[prev:]
    out.write_bytes(b"".join(out_lines))
    return out, numbers


def nul_run(out: Path, line: int, size: int = 4096) -> Path:
    """A run of NUL bytes inside line `line` (1-based), as a disk that filled leaves."""
    src = lines()
    text = src[line - 1]
    src[line - 1] = text[: len(text) // 2] + b"\0" * size + text[len(text) // 2:]
    out.write_bytes(b"".join(src))
    return out


def rolled(folder: Path, drop: str | None = None, parts: int = 3, gzipped: bool = False, name: str = NAME,
           cuts: tuple[float, ...] | None = None) -> Path:
    """The fixture's log split into a rolled set (rm.log.2, rm.log.1, rm.log: oldest first) at line
    boundaries, beside another daemon's log; `drop` names a member to leave out; `gzipped`: the
    oldest member gzipped (rm.log.2.gz), as logrotate leaves it; `cuts`: where the older members
    end, as fractions of the lines (else `parts` of equal lines)."""
    folder.mkdir(parents=True, exist_ok=True)
    src = lines(name)
    ends = [int(len(src) * c) for c in cuts] if cuts else [len(src) // parts * (i + 1) for i in range(parts - 1)]
    bounds = list(zip([0, *ends], [*ends, len(src)]))
    parts = len(bounds)
    names = [f"rm.log.{parts - 1 - i}" if i < parts - 1 else "rm.log" for i in range(parts)]
    for i, member in enumerate(names):
        if member != drop:
            chunk = src[bounds[i][0]:bounds[i][1]]
            data = b"".join(chunk)
            if gzipped and i == 0:
                (folder / f"{member}.gz").write_bytes(gzip.compress(data, mtime=0))
            else:
                (folder / member).write_bytes(data)
    (folder / "or.log").write_bytes(b"01 Jan 2015 00:00:00,000  INFO OR.OrchestratorComponent - N/A T[1] start  "
                                    b"Orchestrator up\n")
    return folder


def packed(folder: Path, out: Path) -> Path:
    """`folder` packed as `out` (.tar, .tar.gz/.tgz or .zip), its files under the folder's name."""
    members = sorted(folder.iterdir())
    if out.name.endswith(".zip"):
        with zipfile.ZipFile(out, "w") as zf:
            for p in members:
                zf.writestr(f"{folder.name}/{p.name}", p.read_bytes())
        return out
    mode = "w:gz" if out.name.endswith((".tgz", ".tar.gz")) else "w"
    with tarfile.open(out, mode) as tf:
        for p in members:
            data = p.read_bytes()
            info = tarfile.TarInfo(f"{folder.name}/{p.name}")
            info.size = len(data)
            info.mtime = 0
            tf.addfile(info, io.BytesIO(data))
    return out


def spliced(name: str, out: Path, start: int, stop: int) -> Path:
    """The fixture's INFO log without bytes [start, stop): a span lost, as a bad copy leaves it (the
    lines cut at either end run together into one)."""
    data = b"".join(lines(name))
    out.write_bytes(data[:start] + data[stop:])
    return out


def _truth_counts(name: str) -> dict[int, list[tuple[int, int]]]:
    return {r["epoch"]: sorted((j["id"], j["nshares_given"]) for j in r["jobs"]) for r in truth(name)}


def agrees_with_truth(name: str, tables, result) -> None:
    """No divergence; the report's tally adds up; the counts of every cycle audited for them are
    truth.jsonl's (by the RM's epoch: a gap renumbers the cycles)."""
    assert result.divergences == []
    rep = result.report()
    assert rep["cycles_agree"] + rep["damaged"]["cycles"] + rep["skipped"]["cycles"] == rep["cycles"]
    assert rep["cycles"] == tables["cycles"].height
    assert not set(result.cycles) & set(result.damaged)
    counts: dict[int, list] = {}
    for c, job, _order, n in result.ref["counts"]:
        counts.setdefault(c, []).append((job, n))
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    want = _truth_counts(name)
    unsettled = result.skipped_kinds.get("counts", {})  # audited for what does not read the machines
    wrong = [c for c in result.cycles if c not in unsettled and sorted(counts.get(c, [])) != want[epochs[c]]]
    assert not wrong, wrong[:5]
