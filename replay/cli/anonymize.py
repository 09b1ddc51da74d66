"""`rmreplay anonymize LOG... -o OUT [--key FILE] [--mapping FILE]`: the same logs, names replaced by pseudonyms."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from replay.cli.options import add_force
from replay.cli.registry import Command
from replay.cli.show import progress_display
from replay.parsing.outdir import check_replaceable

if TYPE_CHECKING:
    from replay.apps.anonymize import Anonymized


def anonymize_rows(done: Anonymized) -> list[tuple[str, str]]:
    """Files, lines (understood or not, rewritten or passed through), names renamed and kept, the key."""
    lines, p = done.lines, done.pseudonyms
    rows = [("files", f"{', '.join(lines.files)} (same names, gzipped where the input was)"),
            ("lines", f"{lines.lines:,}"),
            ("  in records the parser reads", f"{lines.understood:,} ({lines.understood_rewritten:,} rewritten)"),
            ("  others, with a name in them", f"{lines.rewritten:,} rewritten token by token"),
            ("  others, without one", f"{lines.passed_through:,} passed through")]
    shown = {"hosts": "host names", "short_names": "short host names", "domains": "domains", "ips": "IPs",
             "users": "users", "jobs": "job names", "files": "paths", "rules": "node rules"}
    rows.append(("renamed", ", ".join(f"{len(p.kinds[k]):,} {label}" for k, label in shown.items() if p.kinds[k])))
    if p.kinds["rules"]:
        rows.append(("node rules", "each now the pseudonyms of the names and IPs it matched in the log, "
                     "(?!) (nothing) where it matched none: "
                     + "; ".join(f"{rule!r} -> {new!r}" for rule, new in p.kinds["rules"].items())))
    if p.kept:
        rows.append(("kept as they are", "; ".join(f"{name!r}: {why}" for name, why in p.kept.items())))
    if p.loose:
        rows.append(("HashMap order not kept", "; ".join(f"{name!r}: {why}" for name, why in p.loose.items())))
    hosts, users = p.bits.values()
    rows.append(("HashMap order", f"kept in maps of up to {2 ** hosts:,} hosts and {2 ** users:,} users "
                 f"(the pseudonyms share {hosts} and {users} bits of the names' hashes)"))
    rows += [("key", done.key_note), ("mapping", f"{done.mapping} (not in the folder to send)"),
             ("checked", "the anonymized log parses to the same tables, names renamed")]
    return rows


def anonymize_table(done: Anonymized, out: str) -> Table:
    """The summary as a table (on a terminal)."""
    table = Table(title="rmreplay anonymize", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for name, value in anonymize_rows(done):
        table.add_row(f"[yellow]{name}[/]" if name in ("kept as they are", "HashMap order not kept") else name,
                      value)
    return table


def cmd_anonymize(args: argparse.Namespace, console: Console) -> int:
    """rmreplay anonymize LOG... -o OUT [--key FILE] [--mapping FILE] [--force]"""
    from replay.apps.anonymize import anonymize, mapping_path

    check_replaceable(Path(args.out), args.force, "anonymize", args.logs)
    mapping_path(args.out, args.key, args.mapping)  # before the work: a mapping inside OUT is refused at once
    with progress_display(console, "anonymizing") as show:
        done = anonymize(args.logs, args.out, args.key, args.force, progress=show, mapping_file=args.mapping)
    if console.is_terminal:
        console.print(anonymize_table(done, args.out))
    else:  # piped: one whole line per row, never wrapped to a table's columns
        for name, value in anonymize_rows(done):
            console.print(f"{name.strip()}: {value}", markup=False, highlight=False)
    console.print(f"written to [bold]{args.out}[/]: send the log files; keep [bold]{done.mapping}[/] at your "
                  "site (it turns the pseudonyms back into your names)", highlight=False)
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    """anonymize's arguments."""
    p.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz) or a DUCC log folder (its "
                   "rm.log* only): the log's own lines are rewritten, so not a `rmreplay parse -o` directory")
    p.add_argument("-o", "--out", required=True, help="directory for the anonymized files (the folder to send)")
    p.add_argument("--mapping", metavar="FILE", help="where to write the mapping (pseudonym -> name; keep it at "
                   "your site): default <OUT>.mapping.json beside the key, or beside OUT without --key; never "
                   "inside OUT")
    p.add_argument("--key", metavar="FILE", help="the site's key: read, or created there when absent, so that "
                   "later logs get the same pseudonyms (default: a new key for this run only)")
    add_force(p)


COMMAND = Command("anonymize", "the same logs with host, user, job names, IPs and paths replaced by pseudonyms "
                  "(audits the same)", arguments, cmd_anonymize)
