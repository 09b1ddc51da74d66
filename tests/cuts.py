"""Random damage to the bundled logs, audited: what hand-picked damaged copies miss.

    python -m tests.cuts --seed 5 --n 200 [--out DIR]

Each case takes one bundled log under 3 MB that truth.jsonl backs and damages it at random byte
offsets: its first bytes only (the log ends anywhere), a span removed (the lines cut at either end
run together), or up to 300 random bytes spliced in. It audits the copy in process and reports
every case that ends in a traceback or an exit status other than 0, 1 or 2, or that names an RM
divergence on a copy of a log whose own audit has none (truth.jsonl: the RM agreed with itself
there). Each report line gives what `tests.damaged.spliced` (or a prefix) needs to make the copy
again; fix the cause, then hold the case in tests/integration/test_damaged_spans.py.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import io
import random
import shutil
import tempfile
import traceback
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from replay.cli import main
from tests.helpers import FIXTURES

KINDS = ("prefix", "span", "garbage")


@dataclass(frozen=True)
class Cut:
    """One damaged copy: the log, the kind, and the byte offsets (a prefix keeps [0, start))."""

    log: Path
    kind: str
    start: int
    stop: int

    def apply(self, data: bytes) -> bytes:
        """The damaged bytes (the garbage drawn from the offsets: the cut's line makes it again)."""
        if self.kind == "prefix":
            return data[:self.start]
        if self.kind == "span":
            return data[:self.start] + data[self.stop:]
        rng = random.Random(self.start)
        return data[:self.start] + bytes(rng.randrange(256) for _ in range(self.stop - self.start)) + data[self.start:]


def _logs() -> list[Path]:
    return sorted(p for p in FIXTURES.rglob("rm.log*") if p.stat().st_size < 3_000_000
                  and (p.parent / "truth.jsonl.gz").exists())


def _text(log: Path) -> bytes:
    return gzip.decompress(log.read_bytes()) if log.suffix == ".gz" else log.read_bytes()


def _audit(log: Path, out: Path) -> tuple[object, int | None]:
    """The exit status (or the traceback's text) and the number of divergences written."""
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            status: object = main(["audit", str(log), "-o", str(out), "--force", "--no-cache"])
    except BaseException as e:  # noqa: BLE001 - any escape is the finding
        return "".join(traceback.format_exception(e))[-1200:], None
    if "Traceback" in err.getvalue():
        return err.getvalue()[-1200:], None
    found = pl.read_parquet(out / "divergences.parquet").height if status in (0, 1) else None
    return status, found


def draw(rng: random.Random, logs: list[Path], sizes: dict[Path, int]) -> Cut:
    """One random cut of one of `logs`."""
    log = rng.choice(logs)
    kind = rng.choice(KINDS)
    start = rng.randrange(sizes[log])
    stop = {"prefix": start, "span": min(sizes[log], start + rng.randrange(1, 200_000)),
            "garbage": start + rng.randrange(1, 300)}[kind]
    return Cut(log, kind, start, stop)


def run(seed: int, n: int, out: Path) -> list[str]:
    """The findings of `n` random cuts."""
    rng = random.Random(seed)
    texts = {p: _text(p) for p in _logs()}
    sizes = {p: len(t) for p, t in texts.items()}
    clean: dict[Path, int | None] = {}
    findings = []
    for i in range(n):
        cut = draw(rng, list(texts), sizes)
        if cut.log not in clean:
            (out / "clean.log").write_bytes(texts[cut.log])
            clean[cut.log] = _audit(out / "clean.log", out / "clean")[1]
        copy = out / f"cut{i}.log"
        copy.write_bytes(cut.apply(texts[cut.log]))
        status, found = _audit(copy, out / f"cut{i}")
        if status not in (0, 1, 2) or (clean[cut.log] == 0 and found):
            where = f"{cut.log.relative_to(FIXTURES).parent} {cut.kind} {cut.start} {cut.stop}"
            findings.append(f"{where}: {found} divergence(s)" if found else f"{where}: {status}")
        else:  # only a finding's copy and audit are kept
            copy.unlink()
            shutil.rmtree(out / f"cut{i}", ignore_errors=True)
        print(f"\r{i + 1}/{n} cuts, {len(findings)} finding(s)", end="", flush=True)
    print()
    return findings


def cli() -> None:
    """Run the cuts and print each finding."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--out", type=Path, help="keep the copies here (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        for line in run(args.seed, args.n, out):
            print(line)


if __name__ == "__main__":
    cli()
