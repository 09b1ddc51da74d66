"""`_scan.rmcounter`'s integer lists read 64 bytes at a time (replay/parsing/csrc/templates.c
int_values) and its rows sized before they are written (rmcounter.c): against the integers the
hand-built lines were written from, values of every width at every place of the 64-byte steps, the
bytes a template refuses in each, and the call's memory against what it returns."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.parsing import _scan
from replay.parsing.scan import RMCOUNTER_KINDS, _rmcounter_templates

_KIND = {name.removeprefix("rmc_"): k for k, name in enumerate(RMCOUNTER_KINDS)}


def _inputs(lines: list[tuple[str, str]]) -> tuple[bytes, bytes, bytes, bytes]:
    """`_scan.rmcounter`'s data, starts, ends and kinds for (kind, body) lines, one a line of the data."""
    data, starts, ends = b"", [], []
    for _, body in lines:
        raw = body.encode()
        starts.append(len(data))
        data += raw
        ends.append(len(data))
        data += b"\n"

    def i32(values: list[int]) -> bytes:
        return np.array(values, dtype=np.int32).tobytes()

    return data, i32(starts), i32(ends), i32([_KIND[k] for k, _ in lines])


def _call(lines: list[tuple[str, str]]) -> dict | None:
    return _scan.rmcounter(*_inputs(lines), _rmcounter_templates())


def _lists(got: dict, key: str) -> list[list[int] | None]:
    """A list column of the call's rows (None: the row has no such list)."""
    values = np.frombuffer(got[key], dtype=np.int64).tolist()
    ends = np.frombuffer(got[f"{key}_off"], dtype=np.int32).tolist()
    ok = np.frombuffer(got[f"{key}_ok"], dtype=np.int32).tolist()
    return [values[a:b] if present else None for a, b, present in zip([0, *ends], ends, ok)]


def _block(vm: str, names: str = "a", wanted: dict[str, str] | None = None) -> list[tuple[str, str]]:
    return [("start", "countJobShares RmCounter Start"), ("maxorder", "countJobShares maxorder =  3"),
            ("names", f"countJobShares entity_names =  {names} "),
            *((("wanted", f"countJobShares wantedby.{n} = {v}") for n, v in (wanted or {}).items())),
            ("vmachines", f"countJobShares vmachines = {vm}"), ("end", "countJobShares RmCounter End")]


_value = st.one_of(st.integers(0, 9), st.integers(10, 99), st.integers(-99, -1),
                   st.integers(-(10 ** 18) + 1, 10 ** 18 - 1))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_value, st.integers(1, 5)), max_size=90), st.integers(0, 70), st.integers(0, 3))
def test_integer_lists_are_read_whatever_their_widths_and_places(values, lead, trail):
    # the blanks before each value vary, so its digits fall on every side of a 64-byte step
    text = " " * lead + "".join(" " * gap + str(v) for v, gap in values) + " " * trail
    got = _call(_block(text, wanted={"a": text}))
    assert got is not None
    expected = [v for v, _ in values]
    assert _lists(got, "vmachines") == [expected]
    assert _lists(got, "wanted") == [expected]


@pytest.mark.parametrize("at", [0, 1, 30, 62, 63, 64, 65, 127, 128, 200])
@pytest.mark.parametrize("odd", ["1234567890123456789", "\t", "-", "1-2", "+3", "\u00e9", "x", "--5"])
def test_a_token_no_integer_list_takes_refuses_the_call_wherever_it_lies(at, odd):
    # 19 digits, a blank other than ' ', a sign alone, glued or doubled, a letter, a non-ASCII byte:
    # the template's integers are an optional '-' and 1 to 18 digits, so the general path reads them
    text = "   0" * 60
    cut = min(at, len(text))
    assert _call(_block(text[:cut] + " " + odd + " " + text[cut:])) is None
    assert _call(_block(text[:cut] + " -5 " + text[cut:])) is not None


@pytest.mark.parametrize("digits", [17, 18])
@pytest.mark.parametrize("at", [40, 50, 55, 60, 63, 64])
def test_long_values_over_a_64_byte_step_are_read_whole(digits, at):
    big = int("9" * digits)
    text = " " * at + str(big) + "   1"
    got = _call(_block(text))
    assert got is not None and _lists(got, "vmachines") == [[big, 1]]
    assert _call(_block(" " * at + "9" * (digits + 2) + "   1")) is None


def test_an_entity_named_twice_gets_its_list_twice():
    # the rows' room is counted from the lines; a list two rows share is more than that count
    text = "".join(f"{k % 7:4d}" for k in range(80))
    got = _call(_block(text, names="a b a a", wanted={"a": text, "b": "   1"}))
    assert got is not None
    row = [k % 7 for k in range(80)]
    assert _lists(got, "wanted") == [row, [1], row, row]


def test_the_call_holds_little_more_than_the_rows_it_returns():
    # it grew its buffers as it matched every line of the chunk, and held them all at once:
    # 16 MB at its highest for 4.5 MB of rows on an 8 MB chunk of i_mega24
    vm = "".join(f"{k % 3:4d}" for k in range(80))
    args = (*_inputs([ln for _ in range(400) for ln in _block(vm, names="a b c", wanted={n: vm for n in "abc"})]),
            _rmcounter_templates())
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        got = _scan.rmcounter(*args)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got is not None and got["nrows"] == 1200
    returned = sum(len(v) for k, v in got.items() if k != "nrows")
    assert kept - before >= returned
    assert peak - before <= 1.2 * returned + (256 << 10)
