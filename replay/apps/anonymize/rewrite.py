"""Rewrite log lines with the pseudonyms: every name, where it stands as a token; nothing else.

A name is replaced where it is not glued to a longer word: not preceded by a letter, digit, `_`,
`-` or `.` (but `wantedby.name`), not followed by one of those (but a share's `.12`, a sentence's
final `.`). So `host.12^3400^P`, `host:24`, `jd.host.user=name`, `[name]` and `tcp://host:61617`
are rewritten, and `bobby` is not `bob`. A record header keeps its time, level, logger, job id,
thread and method; bodies and continuation lines are rewritten; blanks, line ends and bytes that
are not UTF-8 are left as they are.

The names are those the tables hold (names.py) and the tokens of a shape that names a site
wherever it appears, found in every line while the log is parsed (`Shapes`): IPv4 addresses,
paths, the hosts of URLs, hosts in one of the log's domains (`head.site.example`).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from io import BufferedWriter
from pathlib import Path
from typing import Any

import polars as pl

from replay.apps.anonymize.mapping import Pseudonyms
from replay.apps.anonymize.names import IPV4
from replay.parsing.outdir import submitted
from replay.parsing.header import HEADER_RE
from replay.parsing.sources import Source
from replay.progress import OnProgress, Progress

_HEADER_START = HEADER_RE.removesuffix("(.*)")  # up to the method: what follows is the body
_HEADER = re.compile(_HEADER_START)
_GLUE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_AFTER = r"(?![A-Za-z0-9_/-])(?!\.[A-Za-z_])"  # a name ends where no word goes on (a share's ".12" may)

# the shapes, as Rust regexes for polars (no look-around: context characters are stripped after)
_IPV4 = rf"\b{IPV4}\b"
_PATH = r"(?:^|[\s:=,;(\[<'\"])/[^/\s,;)\]>'\"][^\s,;)\]>'\"]*"  # not a URL's "//"
_URL_HOST = r"://[^/:?#@\s]+"
_DOTTED = r"\b[A-Za-z0-9_-]+(?:\.[A-Za-z][A-Za-z0-9_-]*)+"  # a host name? (kept if in one of the log's domains)


_Trie = dict[str, "_Trie"]  # a regex trie: next character -> the rest ("" marks a word's end)


def _trie(words: Iterable[str]) -> str:
    """A regex matching any of `words`, longest first, factored by common prefixes (fast to scan)."""
    root: _Trie = {}
    for w in words:
        node = root
        for ch in w:
            node = node.setdefault(ch, {})
        node[""] = {}

    def walk(node: _Trie) -> str:
        alts = [re.escape(ch) + walk(sub) for ch, sub in sorted(node.items()) if ch]
        if not alts:
            return ""
        group = alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"
        return f"(?:{group})?" if "" in node else group

    return walk(root)


class Shapes:
    """Collects, chunk by chunk of lines, the tokens whose shape names the site (see module doc)."""

    def __init__(self) -> None:
        """Nothing found yet."""
        self.ips: set[str] = set()
        self.paths: set[str] = set()
        self.hosts: set[str] = set()  # of URLs
        self.dotted: set[str] = set()  # words with dots: hosts when in one of the log's domains

    def add(self, lines: pl.DataFrame) -> None:
        """Take the shapes of one chunk's lines (its `text` column)."""
        text = lines["text"]
        self.ips.update(_found(text, _IPV4))
        self.paths.update(t.lstrip(" \t:=,;([<'\"") for t in _found(text, _PATH))
        self.hosts.update(t[3:] for t in _found(text, _URL_HOST))
        self.dotted.update(_found(text, _DOTTED))

    def name(self, p: Pseudonyms) -> None:
        """Give every shape found a pseudonym (names the tables gave one keep it)."""
        domains = p.kinds["domains"]
        hosts = self.hosts | {d for d in self.dotted if d.partition(".")[2] in domains}
        for ip in sorted(self.ips - p.words.keys()):
            p.ip(ip)
        for path in sorted(self.paths - p.words.keys()):
            p.file(path)
        for host in sorted(hosts - p.words.keys() - p.kept.keys()):
            p.host(host)


def _found(text: pl.Series, pattern: str) -> list[str]:
    return text.str.extract_all(pattern).explode().drop_nulls().unique().to_list()


class Rewriter:
    """Texts and lines rewritten with a finished mapping (every name known: see `Shapes`)."""

    def __init__(self, pseudonyms: Pseudonyms) -> None:
        """Rewrite with `pseudonyms` as they are now."""
        self.p = pseudonyms
        names = [w for w in pseudonyms.words if w and w not in pseudonyms.kept]
        self._names = re.compile(_trie(names) + _AFTER) if names else None
        # the same names without look-around, for polars to pick the lines worth a look: every line
        # the pattern above matches, and a few it then leaves as they are
        self.candidates = (f"(?:^|[^A-Za-z0-9_.-]|wantedby\\.)(?:{'|'.join(map(re.escape, names))})"
                           "(?:[^A-Za-z0-9_/-]|$)") if names else None

    def _replace(self, m: re.Match[str]) -> str:
        s, at = m.string, m.start()
        if at and s[at - 1] in _GLUE and not s.endswith("wantedby.", 0, at):
            return m.group()  # the end of a longer word
        return str(self.p.words[m.group()])

    def text(self, s: str) -> str:
        """A text (one or more lines) with every name replaced."""
        return self._names.sub(self._replace, s) if self._names else s

    def line(self, s: str) -> tuple[str, bool]:
        """(the line rewritten, whether it is a record header): a header's body only."""
        m = _HEADER.match(s)
        if m is None:
            return self.text(s), False
        return s[:m.end()] + self.text(s[m.end():]), True

    def lines(self, texts: list[str]) -> Iterator[tuple[str, bool]]:
        """`line` for many lines, with polars (Rust regexes) deciding which are headers and which
        may hold a name, so that Python looks only at those."""
        plain = [t if t.isascii() or _utf8(t) else None for t in texts]  # polars takes UTF-8 only
        series = pl.Series(plain, dtype=pl.String)
        headers = series.str.contains(_HEADER_START).to_list()
        maybe = (series.str.contains(self.candidates) if self.candidates else series.is_null()).to_list()
        for text, clean, header, hit in zip(texts, plain, headers, maybe):
            if hit or clean is None:  # may hold a name, or holds bytes that are not UTF-8
                yield self.line(text)
            else:
                yield text, header


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # surrogates standing for bytes that were not UTF-8
        return False
    return True


@dataclass
class LineCounts:
    """What the rewrite did with the lines: understood (part of a record the parser read), the
    rest (generic messages kept whole, unparsed lines) passed through or rewritten token by token."""

    understood: int = 0
    understood_rewritten: int = 0
    passed_through: int = 0
    rewritten: int = 0
    files: list[str] = field(default_factory=list)

    @property
    def lines(self) -> int:
        """Every line."""
        return self.understood + self.passed_through + self.rewritten


@dataclass
class Unread:
    """Which lines the parser did not read as part of a known record, per file name: the headers
    of generic messages (their continuation lines go with them) and the unparsed lines."""

    messages: dict[str, set[int]]
    unparsed: dict[str, set[int]]


def is_gzip(path: Path) -> bool:
    """Whether the file starts with the gzip magic (as the parser decides it)."""
    with open(path, "rb") as fh:
        return fh.read(2) == b"\x1f\x8b"


def _line_blocks(path: Path, gz: bool, block: int = 4 << 20) -> Iterator[list[bytes]]:
    """The file's lines (each with its line end; the last may have none), a few MB at a time."""
    rest = b""
    with (gzip.open(path, "rb") if gz else open(path, "rb")) as fh:
        while data := fh.read(block):
            lines = (rest + data).split(b"\n")
            rest = lines.pop()
            yield [line + b"\n" for line in lines]
    if rest:
        yield [rest]


def _open_out(target: Path, gz: bool) -> gzip.GzipFile | BufferedWriter:
    # no time in the gzip header (its name is the file's own): the same log and key give the same bytes
    return gzip.GzipFile(target, "wb", compresslevel=6, mtime=0) if gz else open(target, "wb")


@contextmanager
def _in_background(write: Callable[[bytes], object]) -> Iterator[Callable[[bytes], None]]:
    """`write` on a second thread, one block in flight: compressing a block overlaps the rewriting
    of the next (zlib releases the GIL)."""
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="anonymize")
    pending: list[Future[Any]] = []

    def submit(data: bytes) -> None:
        if pending:
            pending.pop().result()
        pending.append(submitted(pool, write, data))

    try:
        yield submit
        if pending:
            pending.pop().result()
    finally:
        pool.shutdown()


def rewrite_files(sources: list[Source], out: Path, rewriter: Rewriter, unread: Unread,
                  progress: OnProgress | None = None) -> LineCounts:
    """Each source rewritten to OUT/<its name> (gzipped as it was), as one stream: a record cut
    by rotation goes on in the next file, as the parser reads it."""
    counts = LineCounts()
    generic = True  # lines before the first header belong to no record
    for src in sources:
        messages, unparsed = unread.messages.get(src.name, set()), unread.unparsed.get(src.name, set())
        gz = is_gzip(src.path)
        counts.files.append(src.name)
        number = 0
        with _open_out(out / src.name, gz) as fh, _in_background(fh.write) as write:
            for block in _line_blocks(src.path, gz):
                if progress:
                    progress(Progress(f"anonymizing {src.name}", number, None, "lines"))
                bodies = [raw.rstrip(b"\r\n") for raw in block]
                texts = [b.decode("utf-8", "surrogateescape") for b in bodies]
                written = []
                for raw, body, text, (new, header) in zip(block, bodies, texts, rewriter.lines(texts)):
                    number += 1
                    if header:
                        generic = number in messages
                    changed = new != text
                    if generic or number in unparsed:
                        counts.rewritten += changed
                        counts.passed_through += not changed
                    else:
                        counts.understood += 1
                        counts.understood_rewritten += changed
                    written.append(new.encode("utf-8", "surrogateescape") + raw[len(body):] if changed else raw)
                write(b"".join(written))
    return counts
