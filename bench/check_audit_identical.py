"""Digest what `rmreplay audit` writes on every bundled fixture log (and optionally i_mega24), to
prove that a change meant only for speed or memory leaves every output byte-identical.

    python bench/check_audit_identical.py --save before.json [--mega]     # on the commit before
    python bench/check_audit_identical.py --compare before.json [--mega]  # on the change

Each log is audited twice: opened as `rmreplay audit` opens it (only the audit's columns, from a
parse directory read on use, as from the cache) and as the tests and the first, uncached run
hold it (every table in memory); the SHA-256 of report.json, every ref_*.parquet and
divergences.parquet, and of the cycles, skipped cycles and divergences in order, are recorded
per log and way. `--mega` adds fixtures/i_mega24 (about a minute); `--only NAME` narrows.
Exit status 1 when a digest differs from the saved one (each difference named).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"


def fixture_logs(mega: bool) -> list[Path]:
    """Every bundled log the audit can read (INFO and DEBUG), i_mega24 only when asked."""
    logs = []
    for scenario in sorted(p.parent for p in FIXTURES.rglob("scenario.json.gz")):
        for level in ("rm.log", "rm-debug.log"):
            for cand in (scenario / level, scenario / f"{level}.gz"):
                if cand.exists():
                    logs.append(cand)
    if mega:
        logs.append(FIXTURES / "i_mega24" / "rm.log.gz")
    return logs


def digests(log: Path, work: Path) -> dict[str, str]:
    """SHA-256 of each file the audit writes for `log`, and of its results in order, both ways."""
    from replay import parse
    from replay.apps.audit import audit, write_audit
    from replay.model.reads import audit_columns
    from replay.parsing.cache import parse_to
    from replay.parsing.store import ParquetTables

    parse_to([str(log)], str(work / "parsed"), force=True)
    got = {}
    for way, tables in (("disk", lambda: ParquetTables(work / "parsed", audit_columns())),
                        ("memory", lambda: parse([log]).tables)):
        result, out = audit(tables()), work / way
        write_audit(result, out)
        got |= {f"{way}/{p.name}": hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.iterdir())}
        divergences = [d.row() for d in result.divergences]
        summary = json.dumps([result.cycles, sorted(result.skipped.items()), divergences], default=str)
        got[f"{way}/summary"] = hashlib.sha256(summary.encode()).hexdigest()
    return got


def main() -> int:
    """Digest every log's audit; save them or compare them with saved ones."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--save", type=Path, help="write the digests to this JSON file")
    how.add_argument("--compare", type=Path, help="compare with digests saved by --save")
    parser.add_argument("--mega", action="store_true", help="also fixtures/i_mega24 (about a minute)")
    parser.add_argument("--only", help="only logs whose path contains this")
    args = parser.parse_args()
    logs = [p for p in fixture_logs(args.mega) if not args.only or args.only in str(p)]
    found: dict[str, dict[str, str]] = {}
    for log in logs:
        name = str(log.relative_to(FIXTURES))
        with tempfile.TemporaryDirectory() as tmp:
            found[name] = digests(log, Path(tmp))
        print(f"{name}: {len(found[name])} outputs", file=sys.stderr)
    if args.save:
        args.save.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"{len(found)} logs digested into {args.save}")
        return 0
    saved = json.loads(args.compare.read_text())
    bad = [f"{log}/{name}" for log, files in found.items() for name in sorted(set(files) | set(saved.get(log, {})))
           if files.get(name) != saved.get(log, {}).get(name)]
    for item in bad:
        print(f"DIFFERS: {item}")
    print(f"{len(found)} logs compared: {'all identical' if not bad else f'{len(bad)} outputs differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
