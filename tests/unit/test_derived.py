"""The on-disk entries of data derived from rmreplay's own code (replay.parsing.derived) and the
route table kept there (replay.parsing.route_table): a stale key is never read, two writers leave
a whole entry, an unreadable entry is rebuilt."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from replay.parsing import derived as d
from replay.parsing import route_table as rt
from replay.parsing.families import FAMILY_CODE, ROUTES
from replay.parsing.prefixes import Unsupported, compile_prefix

ROOT = Path(__file__).resolve().parents[2]
VALUE = tuple((f"k{i}".encode(), (bytes(16 * i), bytes(32), i % 2, i)) for i in range(200))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def never() -> object:
    raise AssertionError("built, where the entry on disk should have been read")


def anything(_got: object) -> bool:
    return True


def test_an_entry_is_read_back_by_its_key_only(cache):
    key1, key2 = d.source_key("a"), d.source_key("b")
    assert d.derived("x", key1, lambda: "old", anything) == "old"
    assert d.derived("x", key1, never, anything) == "old"  # read, not built
    assert d.derived("x", key2, lambda: "new", anything) == "new"  # another key: built
    # a file moved under another key's name is not that key's entry (the key is inside it too)
    d.entry_path("x", key2).write_bytes(d.entry_path("x", key1).read_bytes())
    assert d.derived("x", key2, lambda: "rebuilt", anything) == "rebuilt"


def test_the_key_is_over_the_parts_not_their_concatenation():
    assert d.source_key("ab", "c") != d.source_key("a", "bc")
    assert d.source_key("a", b"b") == d.source_key(b"a", "b")


def test_the_route_tables_key_follows_its_compiler_and_its_routes(tmp_path, monkeypatch):
    inputs = rt.route_inputs()
    key = rt.table_key(inputs)
    assert key is not None and rt.table_key(inputs) == key
    moved = [*inputs]
    moved[0] = (moved[0][0], moved[0][1], (*moved[0][2][1:], moved[0][2][0]))  # two routes swapped
    assert rt.table_key(tuple(moved)) != key
    edited = tmp_path / "prefixes.py"
    edited.write_bytes(rt.COMPILER.read_bytes() + b"\n# edited\n")
    monkeypatch.setattr(rt, "COMPILER", edited)
    assert rt.table_key(inputs) != key
    monkeypatch.setattr(rt, "COMPILER", tmp_path / "gone.py")
    assert rt.table_key(inputs) is None


def test_the_route_table_is_every_route_compiled_and_read_back(cache, monkeypatch):
    table = rt.route_table()
    assert [entry[0] for entry in table] == [f"{c}\0{m}".encode() for c, m in ROUTES]
    for entry, routes in zip(table, ROUTES.values()):
        try:
            progs = [compile_prefix(r.prefix) for r in routes]
        except Unsupported:
            assert entry[1] is None
            continue
        assert entry[1] == tuple((p.code, p.sets, int(p.anchored), FAMILY_CODE[r.family])
                                 for p, r in zip(progs, routes))
    monkeypatch.setattr(rt, "build", lambda _inputs: never())
    assert rt.route_table() == table  # the second process reads it from disk
    assert len(list((cache / "derived").glob("routes-*.marshal"))) == 1


def test_a_table_of_another_shape_is_not_taken(cache):
    inputs = rt.route_inputs()
    table = rt.build(inputs)
    assert rt.valid_table(table, inputs)
    entry = next(i for i, e in enumerate(table) if e[1])
    wrong_family = (table[entry][0], ((*table[entry][1][0][:3], -5), *table[entry][1][1:]))
    short_code = (table[entry][0], ((b"\0" * 15, *table[entry][1][0][1:]), *table[entry][1][1:]))
    for bad in (table[1:], (*table[:entry], wrong_family, *table[entry + 1:]),
                (*table[:entry], short_code, *table[entry + 1:]), "text", None):
        assert not rt.valid_table(bad, inputs)
    key = rt.table_key(inputs)
    assert key is not None
    d._write(d.entry_path("routes", key), key, table[1:])  # a sound file holding the wrong thing
    assert rt.route_table() == table


def _damaged(path: Path, how: str) -> None:
    raw = path.read_bytes()
    if how == "truncated":
        path.write_bytes(raw[:-7])
    elif how == "flipped":
        path.write_bytes(raw[:-3] + bytes([raw[-3] ^ 1]) + raw[-2:])
    elif how == "garbage":
        path.write_bytes(os.urandom(len(raw)))
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "folder":
        path.unlink()
        path.mkdir()


@pytest.mark.parametrize("how", ["truncated", "flipped", "garbage", "empty", "folder"])
def test_an_unreadable_entry_is_rebuilt(cache, how):
    key = d.source_key("v")
    d.derived("x", key, lambda: VALUE, anything)
    _damaged(d.entry_path("x", key), how)
    assert d.derived("x", key, lambda: ("rebuilt",), anything) == ("rebuilt",)
    if how != "folder":  # written again whole
        assert d.derived("x", key, never, anything) == ("rebuilt",)


def test_a_payload_its_check_refuses_is_rebuilt(cache):
    key = d.source_key("v")
    d.derived("x", key, lambda: ("one", "two"), anything)
    assert d.derived("x", key, lambda: ("built",), lambda got: got == ("built",)) == ("built",)


def test_no_cache_folder_to_write_is_no_error(tmp_path, monkeypatch):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("RMREPLAY_CACHE", str(blocked))
    assert d.derived("x", d.source_key("v"), lambda: VALUE, anything) == VALUE
    assert blocked.read_text() == "not a folder"


def test_only_the_newest_entries_of_a_name_are_kept(cache):
    for i in range(d._KEEP + 5):
        d.derived("x", d.source_key(str(i)), lambda: (i,), anything)
    d.derived("y", d.source_key("other"), lambda: (1,), anything)
    assert len(list((cache / "derived").glob("x-*.marshal"))) == d._KEEP
    assert d.derived("x", d.source_key(str(d._KEEP + 4)), never, anything) == (d._KEEP + 4,)
    assert d.derived("y", d.source_key("other"), never, anything) == (1,)


WRITER = """
import sys, time
from replay.parsing import derived as d
value = tuple((f"k{i}".encode(), (bytes(16 * i), bytes(32), i % 2, i)) for i in range(200))
key = d.source_key("shared")
until = float(sys.argv[1])
while time.time() < until:
    d._write(d.entry_path("x", key), key, value)
"""


def test_two_writers_at_once_leave_a_whole_entry_every_reader_sees_whole(cache):
    key = d.source_key("shared")
    until = time.time() + 2.0
    env = {**os.environ, "RMREPLAY_CACHE": str(cache)}
    writers = [subprocess.Popen([sys.executable, "-c", WRITER, str(until)], cwd=ROOT, env=env) for _ in range(2)]
    seen = 0
    while any(w.poll() is None for w in writers):
        got = d._read(d.entry_path("x", key), key)
        if got is not None:
            assert got[0] == VALUE
            seen += 1
    assert [w.wait() for w in writers] == [0, 0]
    assert seen > 0
    assert d.derived("x", key, never, anything) == VALUE
    assert sorted(p.name for p in (cache / "derived").iterdir()) == [d.entry_path("x", key).name]
