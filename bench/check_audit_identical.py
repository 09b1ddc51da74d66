"""Digest what `rmreplay audit` writes on every bundled fixture log (and optionally i_mega24), and
what `explain`, `whatif` and `simulate` write on some of them, to prove that a change meant only for
speed or memory leaves every output byte-identical.

    python bench/check_audit_identical.py --save before.json [--mega]     # on the commit before
    python bench/check_audit_identical.py --compare before.json [--mega]  # on the change

Each log is audited twice: opened as `rmreplay audit` opens it (only the audit's columns, from a
parse directory read on use, as from the cache) and as the tests and the first, uncached run
hold it (every table in memory); the SHA-256 of report.json, every ref_*.parquet and
divergences.parquet, and of the cycles, skipped cycles and divergences in order, are recorded
per log and way. On the logs of COMMANDS (with `--mega`, h_mega15's INFO log and i_mega24 too)
the commands run on the parse directory, through rmreplay's entry point, on a cache of the log's
own, in this order: `whatif --set` (one setting; it runs the audit and stores it), `explain --job`
(the job's life and last cycle) and `explain --job --cycle` (one cycle), both `--json`, from the
stored audit, and `simulate --set` (bench/command_choice.py chooses the job, the cycle and the
setting); each one's exit status and the SHA-256 of what it prints (explain) or writes (-o) are
recorded. `--mega` adds fixtures/i_mega24 (a few minutes); `--only NAME` narrows; `--audit-only`
leaves the commands out (to compare with digests saved without them); `--commands-only` keeps
only the logs they run on. Exit status 1 when a digest
differs from the saved one (each difference named).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
sys.path.insert(0, str(ROOT / "bench"))
from command_choice import choose  # noqa: E402 (after the path insert)

# the logs the commands run on besides the audit: from the RM's start and mid-stream, INFO and DEBUG,
# reservations and node failures, a 2.0.0 release's log and a held-out one
COMMANDS = ("a_tiny/rm.log", "f_node_failure/rm.log.gz", "g_reservations_services/rm.log.gz",
            "corpus/midstream_rich_donor_threshold/rm.log.gz", "corpus/purge_of_leaving_shares/rm-debug.log.gz",
            "releases/2.0.0/purge-stops/rm.log.gz", "heldout/seed47-100/rm.log.gz")
MEGA_COMMANDS = ("h_mega15/rm.log.gz", "i_mega24/rm.log.gz")
RUNS = ("whatif", "explain-job", "explain-cycle", "simulate")  # the commands' digests' prefixes, in order


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


def command_digests(work: Path) -> dict[str, str]:
    """Each command's exit status and the SHA-256 of its output on the log parsed into `work/parsed`."""
    from replay.cli import main
    from replay.parsing.store import ParquetTables, all_columns

    parsed = str(work / "parsed")
    chosen = choose(ParquetTables(parsed, all_columns()))
    explain = ["explain", parsed, "--json", "--job", str(chosen.job)]
    runs = dict(zip(RUNS, (["whatif", parsed, *chosen.change, "-o", str(work / "whatif")], explain,
                           [*explain, "--cycle", str(chosen.cycle)],
                           ["simulate", parsed, *chosen.change, "-o", str(work / "simulate")])))
    cache = os.environ.get("RMREPLAY_CACHE")
    os.environ["RMREPLAY_CACHE"] = str(work / "cache")  # the log's own: no audit stored before its whatif
    got = {}
    try:
        for name, argv in runs.items():
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
                code = main(argv)
            out = work / name
            written = [(p.name, p.read_bytes()) for p in sorted(out.iterdir())] if out.is_dir() else []
            got[f"{name}/exit"] = str(code)
            if name.startswith("explain"):
                got[f"{name}/stdout"] = hashlib.sha256(printed.getvalue().encode()).hexdigest()
            got |= {f"{name}/{file}": hashlib.sha256(data).hexdigest() for file, data in written}
    finally:
        if cache is None:
            os.environ.pop("RMREPLAY_CACHE")
        else:
            os.environ["RMREPLAY_CACHE"] = cache
    return got


def main() -> int:
    """Digest every log's audit; save them or compare them with saved ones."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    how = parser.add_mutually_exclusive_group(required=True)
    how.add_argument("--save", type=Path, help="write the digests to this JSON file")
    how.add_argument("--compare", type=Path, help="compare with digests saved by --save")
    parser.add_argument("--mega", action="store_true",
                        help="also fixtures/i_mega24, and the commands on it and on h_mega15")
    parser.add_argument("--only", help="only logs whose path contains this")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--audit-only", action="store_true", help="leave out explain, whatif and simulate")
    which.add_argument("--commands-only", action="store_true", help="only the logs explain, whatif and simulate "
                       "run on")
    args = parser.parse_args()
    commands = () if args.audit_only else COMMANDS + (MEGA_COMMANDS if args.mega else ())
    logs = [p for p in fixture_logs(args.mega) if (not args.only or args.only in str(p))
            and (not args.commands_only or str(p.relative_to(FIXTURES)) in commands)]
    found: dict[str, dict[str, str]] = {}
    for log in logs:
        name = str(log.relative_to(FIXTURES))
        with tempfile.TemporaryDirectory() as tmp:
            found[name] = digests(log, Path(tmp))
            if name in commands:
                found[name] |= command_digests(Path(tmp))
        print(f"{name}: {len(found[name])} outputs", file=sys.stderr)
    if args.save:
        args.save.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
        print(f"{len(found)} logs digested into {args.save}")
        return 0
    saved = json.loads(args.compare.read_text())
    if args.audit_only:  # (the saved commands' digests are not compared)
        saved = {log: {k: v for k, v in files.items() if k.split("/")[0] not in RUNS} for log, files in saved.items()}
    bad = [f"{log}/{name}" for log, files in found.items() for name in sorted(set(files) | set(saved.get(log, {})))
           if files.get(name) != saved.get(log, {}).get(name)]
    for item in bad:
        print(f"DIFFERS: {item}")
    print(f"{len(found)} logs compared: {'all identical' if not bad else f'{len(bad)} outputs differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
