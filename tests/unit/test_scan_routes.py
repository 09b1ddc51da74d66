"""The compiled route prefixes (replay.parsing.prefixes, routing) against the polars regexes they stand
for: hand-worked bodies, then Hypothesis over lines near each route."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.parsing.chunks import Piece
from replay.parsing.families import GENERIC, ROUTES
from replay.parsing.routing import route
from replay.parsing.prefixes import Unsupported, compile_prefix
from replay.parsing.scanned import full_records, scan_records


# -- routing: the compiled prefixes against polars' regexes -------------------------------------

_GROUPS = sorted(ROUTES)


def _routed(lines: list[str]) -> tuple[list, list]:
    """(compiled, polars) family of each header line's record."""
    _, recs = scan_records([Piece(0, 1, "\n".join(lines).encode())])
    compiled = route(recs.records, recs)["family"].to_list()
    by_polars = route(full_records(recs).drop("_fam"))["family"].to_list()
    return compiled, by_polars


def _line(group: tuple[str, str], body: str) -> str:
    return f"01 Jan 2015 00:01:00,000  INFO RM.{group[0]} - N/A T[1] {group[1]} {body}"


def test_every_route_prefix_is_in_the_compiled_subset():
    for routes in ROUTES.values():
        for one in routes:
            compile_prefix(one.prefix)


def test_syntax_outside_the_subset_is_refused_not_guessed():
    for regex in (r"\bword", r"(?P<x>a)", r"a{2,x}", r"(a*)*", "caf\u00e9", r"[\d-z]"):
        with pytest.raises(Unsupported):
            compile_prefix(regex)


def test_hand_worked_bodies_route_alike():
    cases = [
        (("NodepoolScheduler", "apportion_qshares"), "countJobShares RmCounter Start"),
        (("NodepoolScheduler", "apportion_qshares"), "countJobShares  wantedby.J12 = 1 2"),
        (("NodepoolScheduler", "apportion_qshares"), "countJobShares A 1 2 3"),
        (("NodepoolScheduler", "apportion_qshares"), "countJobShares A 1 2 x"),
        (("NodepoolScheduler", "doEvictions"), "-1   0 3 4"),
        (("NodepoolScheduler", "doEvictions"), "1 0 3 -4"),
        (("NodePool", "findShares"), "counted -1 current 0 needed -1 order 2 given 0"),
        (("NodePool", "findShares"), "counted - current 0 needed -1 order 2 given 0"),
        (("NodepoolScheduler", "detectFragmentation"), "np  bob -1 2 3 4 5 POTENTIALLY NEEDY"),
        (("NodePool", "disable"), "Nodepool: np Host offline: h1 purge: true"),
        (("Scheduler", "initClasses"), "----"), (("Scheduler", "initClasses"), "---"),
        (("Scheduler", "initClasses"), "fair FIXED_SHARE 1"), (("Scheduler", "schedule"), "-----"),
        (("Scheduler", "findNodepoolByRule"), "3 host short 10.0.0.1"),
        (("Scheduler", "findNodepoolByRule"), "3 host short 10.0.0.1 extra"),
        (("JobManagerConverter", "eventArrives"), "[S] State: x"),
        (("NoSuchClass", "method"), "anything"),
    ]
    compiled, by_polars = _routed([_line(g, b) for g, b in cases])
    assert compiled == by_polars
    assert compiled[:4] == ["rmc_start", None, "rmc_before_bonus_row", None]  # one space after \S+, not two
    assert compiled[-1] == GENERIC
    negative = [i for i, (g, _) in enumerate(cases) if g == ("NodePool", "findShares")]
    assert [compiled[i] for i in negative] == ["find_shares_counted", None]  # a negative count, not a bare '-'


_ASCII = st.characters(min_codepoint=32, max_codepoint=126) | st.just("\t")


@st.composite
def _near_route(draw) -> tuple[tuple[str, str], str]:
    """A (class, METHOD) and a body that matches one of its prefixes, often then damaged."""
    group = draw(st.sampled_from(_GROUPS))
    prefix = draw(st.sampled_from([r.prefix for r in ROUTES[group]]))
    body = draw(st.from_regex(prefix, alphabet=_ASCII)).strip(" \t")
    edit = draw(st.sampled_from(["keep", "cut", "change", "grow"]))
    at = draw(st.integers(0, max(len(body) - 1, 0)))
    if edit == "cut":
        body = body[:at] + body[at + 1:]
    elif edit == "change":
        body = body[:at] + draw(st.sampled_from(list(" -1x*:[")) ) + body[at + 1:]
    elif edit == "grow":
        body = body + draw(st.text(alphabet=" 1-ab", max_size=6))
    return group, body.strip(" \t")


@settings(max_examples=400)
@given(st.lists(_near_route(), min_size=1, max_size=10))
def test_any_body_routes_as_polars_routes_it(cases):
    compiled, by_polars = _routed([_line(group, body) for group, body in cases])
    assert compiled == by_polars
