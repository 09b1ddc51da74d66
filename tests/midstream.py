"""Cut a bundled log mid-stream, as rotation does: the bootstrap and the nodes' arrival roll away.

`cut(name, level, kind)` keeps the log from a point inside one cycle's RmCounter block, inside
its createState block, or between it and the next cycle. The cycle is the first in which a node
that held work has gone idle (truth.jsonl shows when; a fixture where no node ever goes idle is
cut a third of the way in), so the cut log starts with nodes it may never size. Where the log
has no such point from that cycle on (a cluster idle to the end holds no RmCounter block), the
last one before it is taken.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.helpers import FIXTURES, log_path, truth

KINDS = ("counter", "schedule", "between")


def _lines(name: str, level: str) -> list[str]:
    path = log_path(name, level)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as fh:
        return fh.readlines()


def idle_epoch(name: str) -> int:
    """The scheduling epoch of the first cycle after a node that held work went idle (truth.jsonl)."""
    records = truth(name)
    busy: set[str] = set()
    for rec in records:
        held = {s["host"] for j in rec["jobs"] for s in j["shares"]}
        if (busy - held) & {n["name"] for n in rec["nodes"]}:
            return rec["epoch"]
        busy |= held
    return records[len(records) // 3]["epoch"]


def _point(lines: list[str], i: int, kind: str) -> int | None:
    """The cut inside (or after) the cycle part that line i starts, if line i starts one of `kind`."""
    line = lines[i]
    if kind == "counter" and "countClassShares RmCounter Start" in line:
        return i + 3
    if kind == "schedule" and "createState  Schedule sent to Orchestrator" in line:
        body = next((j for j in range(i + 1, min(i + 5, len(lines))) if lines[j].startswith("\t")), None)
        return None if body is None else body + 1
    if kind == "between" and "Scheduling loop returns" in line:
        return i + 1
    return None


def cut_index(lines: list[str], epoch: int, kind: str) -> int:
    """Index of the first line kept: inside the RmCounter block, inside the createState block, or
    between cycles, of the first cycle from `epoch` on that has one (or, where the log has none
    after it, the last one before it)."""
    start = next(i for i, line in enumerate(lines) if f"-------- {epoch} ------- Entering scheduling loop" in line)
    for i in (*range(start, len(lines)), *range(start - 1, 0, -1)):
        point = _point(lines, i, kind)
        if point is not None:
            return point
    raise ValueError(f"no {kind} point in the log")


def cut(name: str, level: str, kind: str, out: Path, at: float | None = None) -> Path:
    """The fixture's log from the cut point on, written to `out`: in the cycle a node went idle
    in, or `at` that fraction of the cycles."""
    lines = _lines(name, level)
    records = truth(name)
    epoch = idle_epoch(name) if at is None else records[int(len(records) * at)]["epoch"]
    out.write_text("".join(lines[cut_index(lines, epoch, kind):]))
    return out


def classes_only(name: str, out: Path, node_files: bool = True) -> Path:
    """A --config folder with the fixture's ducc.classes (and the node files it names) only."""
    out.mkdir(parents=True, exist_ok=True)
    src = FIXTURES / name / "resources"
    (out / "ducc.classes").write_text((src / "ducc.classes").read_text())
    if node_files:
        for path in src.glob("*.nodes"):
            (out / path.name).write_text(path.read_text())
    return out
