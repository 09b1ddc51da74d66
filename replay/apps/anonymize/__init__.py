"""`rmreplay anonymize`: the same logs with the site's names replaced by keyed pseudonyms.

    from replay.apps.anonymize import anonymize
    done = anonymize(["/var/log/ducc/"], "out", key_file="site.key")

1. Parse the logs (what names a host, a user, a job is the grammar's to say: names.py).
2. Give every name a pseudonym (mapping.py), searched so that the RM's HashMap orders, which
   rmref replays, stay the same (pseudonyms.py); and every token whose shape names the site
   (an IP, a path, a host in one of the log's domains) found in any line (rewrite.Shapes); every
   node rule, the pseudonyms of what it matched (rules.py).
3. Rewrite every line token by token (rewrite.py), into OUT as the same files (gzipped where the
   input was); the whole directory appears at once (replay/parsing/outdir.py). OUT is the folder
   meant for sending: the mapping (pseudonym -> name) goes outside it, beside the key
   (`mapping_path`).
4. Parse the rewritten files and require the original's tables, renamed (`check`): an output
   that would not read the same is not written.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from replay.apps.anonymize.key import load_or_create_key
from replay.apps.anonymize.mapping import MAPPING_FORMAT, Pseudonyms, pseudonyms_for
from replay.apps.anonymize.names import config_user, inventory
from replay.apps.anonymize.rules import rename_rules, rule_matches
from replay.apps.anonymize.rewrite import (
    LineCounts,
    Rewriter,
    Shapes,
    Unread,
    rewrite_files,
)
from replay.parsing.logdir import find_inputs
from replay.parsing.outdir import atomic_output_dir, atomic_output_file, check_replaceable_file
from replay.parsing.pipeline import MemorySink, Summary, parse, run
from replay.parsing.sources import InputError
from replay.progress import OnProgress, Progress, quiet

MAPPING = "mapping.json"


@dataclass(frozen=True)
class Anonymized:
    """What `anonymize` did: the lines, the pseudonyms, the key, the original parse's summary."""

    lines: LineCounts
    pseudonyms: Pseudonyms
    key_note: str
    summary: Summary
    mapping: Path  # where mapping.json went: outside OUT, which is the folder meant for sending


def unread_lines(tables: Mapping[str, pl.DataFrame]) -> Unread:
    """The lines no known record took, per file: generic messages' headers and unparsed lines."""
    def by_file(frame: pl.DataFrame) -> dict[str, set[int]]:
        out: dict[str, set[int]] = {}
        for name, line in frame.select("file", "line").iter_rows():
            out.setdefault(name, set()).add(line)
        return out

    return Unread(by_file(tables["messages"]), by_file(tables["unparsed"]))


def rename_tables(tables: Mapping[str, pl.DataFrame], rewriter: Rewriter) -> dict[str, pl.DataFrame]:
    """The tables with every string rewritten as the lines were (what the anonymized log must
    parse to); a `user.<name>.<setting>` key renames its user."""
    def value(v: str) -> str:
        user = config_user(v)
        if user is not None and user in rewriter.p.words:
            return f"user.{rewriter.p.words[user]}{v[len('user.') + len(user):]}"
        return rewriter.text(v)

    out = {}
    for name, frame in tables.items():
        exprs = []
        for column, dtype in frame.schema.items():
            if column == "file" or dtype not in (pl.String, pl.List(pl.String)):
                continue
            series = frame[column].explode() if dtype == pl.List(pl.String) else frame[column]
            olds = series.drop_nulls().unique().to_list()
            renamed = {old: new for old in olds if (new := value(old)) != old}
            if not renamed:
                continue
            expr = pl.element() if dtype == pl.List(pl.String) else pl.col(column)
            expr = expr.replace(list(renamed), list(renamed.values()))
            exprs.append(pl.col(column).list.eval(expr) if dtype == pl.List(pl.String) else expr)
        out[name] = frame.with_columns(exprs) if exprs else frame
    return out


def check(expected: dict[str, pl.DataFrame], files: list[Path]) -> None:
    """Parse the anonymized files; InputError unless every table is `expected` (the original's, renamed)."""
    got = parse([str(f) for f in files]).tables
    for name, frame in expected.items():
        if not got[name].equals(frame):
            diff = got[name].join(frame, on=got[name].columns, how="anti", nulls_equal=True).head(1)
            raise InputError(f"the anonymized log would not parse to the same {name} table "
                             f"({diff.to_dicts()[:1] or 'row count differs'}): nothing written; please report "
                             "this message to rmreplay's maintainers")


def mapping_path(out: str | Path, key_file: str | Path | None = None, mapping: str | Path | None = None) -> Path:
    """Where the mapping goes: `mapping`, else `<OUT's name>.mapping.json` beside the key (beside
    OUT without one); InputError when that is inside OUT (the folder meant for sending)."""
    folder = Path(out).resolve()
    where = Path(mapping) if mapping else (Path(key_file).resolve().parent if key_file else folder.parent) / (
        f"{folder.name}.{MAPPING}")
    if where.resolve().is_relative_to(folder):
        raise InputError(f"{where}: the mapping turns the pseudonyms back into your names; it cannot go inside "
                         f"{out}, the folder meant for sending (give --mapping FILE elsewhere)")
    return where


def anonymize(paths: list[str], out: str | Path, key_file: str | Path | None = None, force: bool = False,
              progress: OnProgress | None = None, mapping_file: str | Path | None = None) -> Anonymized:
    """Write OUT/<each input's name> with the site's names replaced, and the mapping outside OUT
    (`mapping_path`)."""
    say = progress or quiet
    mapping = mapping_path(out, key_file, mapping_file)
    check_replaceable_file(mapping, force, MAPPING_FORMAT.encode())
    sources = find_inputs(paths).sources
    names = [s.name for s in sources]
    if len(set(names)) != len(names):
        twice = ", ".join(sorted({n for n in names if names.count(n) > 1}))
        raise InputError(f"two inputs have the same file name ({twice}): "
                         "OUT keeps the names, so anonymize each set into its own directory")
    key, key_note = load_or_create_key(key_file)
    sink, shapes = MemorySink(), Shapes()
    summary = run(paths, sink, progress=say, lines_to=shapes.add)
    tables = sink.tables()
    say(Progress("choosing pseudonyms"))
    inv = inventory(tables)
    pseudonyms = pseudonyms_for(inv, key)
    shapes.name(pseudonyms)
    rename_rules(pseudonyms, rule_matches(tables, inv), inv)
    rewriter = Rewriter(pseudonyms)
    with atomic_output_dir(out, force, command="anonymize", inputs=paths) as tmp:
        lines = rewrite_files(sources, tmp, rewriter, unread_lines(tables), say)
        say(Progress("checking that the anonymized log parses to the same tables"))
        check(rename_tables(tables, rewriter), [tmp / n for n in names])
        with atomic_output_file(mapping, force, marker=MAPPING_FORMAT.encode()) as written:
            written.write_text(rewriter.p.to_json(), encoding="utf-8")
            os.chmod(written, 0o600)  # it turns the pseudonyms back into names: the site's eyes only
    return Anonymized(lines, pseudonyms, key_note, summary, mapping)
