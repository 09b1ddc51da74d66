"""A log without its banner is replayed as the latest release its message forms allow
(replay.model.release): that assumption must never read as an RM divergence.

Ground truth: truth.jsonl, the real RM's own state after every published schedule of a release
fixture (fixtures/releases/RELEASE/NAME, written by that release's RM through tests/oracle). A copy
without the two banner lines (`DUCC Version`, `RM Version`) is audited under the release inferred
and under every other release of the inferred range: each must agree with truth. The guard below
says why that holds, and fails the day rmref models a difference inside a range
(docs/rm-release.md, "A release inferred from a range").
"""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import polars as pl
import pytest

from replay import parse
from replay.apps.audit import audit
from replay.model.release import choose, with_option
from rmref.behaviours import CHANGES, for_release
from rmref.releases import RELEASES
from tests.damaged import agrees_with_truth
from tests.helpers import FIXTURES

ROOT = Path(__file__).resolve().parents[2]
BANNER_LINE = re.compile(r"\binit\s+(?:DUCC|RM) Version\s+:")
NAMES = [r.name for r in RELEASES]
# (the release that wrote the fixture, the range its message forms allow, the release replayed)
CASES = [
    ("2.0.0", ("2.0.0", "2.0.1"), "2.0.1"),
    ("2.1.0", ("2.1.0", "2.2.2"), "2.2.2"),
    ("2.2.1", ("2.1.0", "2.2.2"), "2.2.2"),
    ("3.0.0", ("3.0.0", "trunk"), "trunk"),
]
SAMPLE = "gen12-004"


def _without_banner(writer: str, tmp_path: Path) -> Path:
    """The fixture's INFO log without its banner lines, and nothing else removed."""
    with gzip.open(FIXTURES / "releases" / writer / SAMPLE / "rm.log.gz", "rt") as fh:
        lines = fh.readlines()
    kept = [ln for ln in lines if not BANNER_LINE.search(ln)]
    assert len(lines) - len(kept) == 2  # DUCC Version and RM Version
    out = tmp_path / "rm.log"
    out.write_text("".join(kept))
    return out


def _range(span: tuple[str, str]) -> list[str]:
    return NAMES[NAMES.index(span[0]): NAMES.index(span[1]) + 1]


@pytest.mark.parametrize(("writer", "span", "chosen"), CASES, ids=[c[0] for c in CASES])
def test_a_log_without_its_banner_agrees_with_truth_under_every_release_of_its_range(writer, span, chosen, tmp_path):
    tables = dict(parse([_without_banner(writer, tmp_path)]).tables)
    name = f"releases/{writer}/{SAMPLE}"
    result = audit(tables)
    got = result.rm_release
    assert got is not None and (got.release.name, got.source) == (chosen, "inferred")
    assert f"written by {span[0]} to {span[1]}" in got.evidence
    assert any(a.setting == "DUCC release" and a.value == chosen for a in result.assumed)  # said, under `assumed`
    agrees_with_truth(name, tables, result)
    for other in _range(span):
        if other == chosen:
            continue
        with_option(tables, other)
        under = audit(tables)
        assert under.rm_release is not None and under.rm_release.release.name == other
        agrees_with_truth(name, tables, under)


def _first_schedule_only(writer: str, tmp_path: Path) -> Path:
    """The fixture's INFO log up to its second `Schedule sent` line (the boot and one published
    schedule: no second cycle), without its banner lines."""
    with gzip.open(FIXTURES / "releases" / writer / SAMPLE / "rm.log.gz", "rt") as fh:
        lines = fh.readlines()
    sent = [i for i, ln in enumerate(lines) if "Schedule sent to Orchestrator" in ln]
    out = tmp_path / "rm.log"
    out.write_text("".join(ln for ln in lines[:sent[1]] if not BANNER_LINE.search(ln)))
    return out


@pytest.mark.parametrize(("writer", "span", "chosen"), [CASES[1], CASES[3]], ids=["2.1.0", "3.0.0"])
def test_a_log_of_one_published_schedule_is_inferred_from_the_publications_before_it(writer, span, chosen, tmp_path):
    """With one cycle, the absence of `handleNewMaster` (3.0.0 on) is read from the Orchestrator
    publications the RM took in before it; replayed as trunk (2.1.0 to trunk), the 2.1.0 log read
    as 6 placement divergences."""
    tables = dict(parse([_first_schedule_only(writer, tmp_path)]).tables)
    assert tables["cycles"].height == 1
    result = audit(tables)
    got = result.rm_release
    assert got is not None and (got.release.name, got.source) == (chosen, "inferred")
    assert f"written by {span[0]} to {span[1]}" in got.evidence
    agrees_with_truth(f"releases/{writer}/{SAMPLE}", tables, result)


LISTENER = ("ResourceManagerEventListener", "onOrchestratorStateUpdateEvent")  # `Event arrives`
OR_STATE = ("ResourceManagerComponent", "onJobManagerStateUpdate")  # `OR state arrives` and its `ignored` warning


@pytest.mark.parametrize(("lines", "span"), [
    ([LISTENER, OR_STATE, LISTENER], "2.0.0 to 2.2.2"),  # one publication taken in whole: no handleNewMaster
    ([LISTENER, OR_STATE, OR_STATE, LISTENER], None),  # that publication ignored (arrived too soon)
    ([OR_STATE, LISTENER, OR_STATE], None),  # the log begins inside one publication, ends inside the next
])
def test_a_publication_taken_in_whole_without_handle_new_master_is_before_3_0_0(lines, span):
    tables = {"messages": pl.DataFrame(lines, schema=["cls", "method"], orient="row"),
              "cycles": pl.DataFrame({"cycle": [1]})}
    got = choose(tables)
    if span is None:
        assert got.source == "default"
    else:
        assert got.source == "inferred" and f"written by {span}" in got.evidence


def _flags_read() -> set[str]:
    """Every behaviour flag the code tests (`.has("flag")` in rmref, replay and tui)."""
    found: set[str] = set()
    for package in ("rmref", "replay", "tui"):
        for path in (ROOT / package).rglob("*.py"):
            found.update(re.findall(r"\.has\(\"(\w+)\"\)", path.read_text()))
    return found


def test_the_flags_read_are_the_behaviour_changes():
    """The guard's scan finds the flags the phases do read (a scan finding nothing would pass anything)."""
    read = _flags_read()
    assert {"purge_by_policy", "node_ip_logged", "free_space_clamped"} <= read
    assert read <= {c.flag for c in CHANGES}


# A flag that differs inside a range, read only where a form that splits the range shows: the
# machines setupPreemptions walks were listed by countFreeableMachines, whose `Machines to search`
# line gives 2.2.0 on its hosts' orders (the tests below); a host no node rule matches is put in the
# last rule's pool by 3.0.0 alone, which adds it by rule with no `match by` line at each of its
# reports (test_pool_config.py: a cut shorter than a report period may show neither).
SPLIT_BY_A_FORM = {"clearing_order_per_share", "regex_rule_fallthrough_fixed"}


@pytest.mark.parametrize(("writer", "span", "chosen"), CASES, ids=[c[0] for c in CASES])
def test_every_release_of_an_inferred_range_replays_alike(writer, span, chosen):
    """Inside each range the inference gives, no flag the code reads differs: the release replayed
    cannot change a decision. When this fails, a log without its banner may diverge only because of
    the release chosen: replay.model.release must then choose among the range (docs/rm-release.md)."""
    read = sorted(_flags_read())
    behaviours = {r: for_release(r) for r in _range(span)}
    differ = [flag for flag in read if len({b.has(flag) for b in behaviours.values()}) > 1
              and flag not in SPLIT_BY_A_FORM]
    assert not differ, f"{span[0]} to {span[1]} differ in {differ}"


@pytest.mark.parametrize(("hosts", "span"), [
    (["n07.sim.ducc", "n08.sim.ducc"], ("2.1.0", "2.1.0")),  # [P] events: 2.1.0 on; bare hosts: before 2.2.0
    (["np103.sim.ducc:2", "np102.sim.ducc:2"], ("2.2.0", "trunk")),
])
def test_the_machines_to_search_form_splits_the_range_at_2_2_0(hosts, span):
    tables = {"job_events": pl.DataFrame({"tag": ["[P]"]}),
              "expansions": pl.DataFrame({"kind": ["freeable_order"], "hosts": [hosts]})}
    got = choose(tables)
    written = span[0] if span[0] == span[1] else f"{span[0]} to {span[1]}"
    assert got.source == "inferred" and f"written by {written}," in got.evidence
    assert len({for_release(r).has("clearing_order_per_share") for r in _range(span)}) == 1


@pytest.mark.parametrize(("fixture", "span"), [("2.2.2/reservation-ip", "2.2.0 to 2.2.2"),
                                               ("2.0.0/clears-every-machine-set-aside", "2.0.0 to 2.0.1")])
def test_a_log_with_a_machine_set_aside_infers_a_range_where_the_clearing_rule_is_one(fixture, span, tmp_path):
    """Without their banners: the 2.2.2 log's `Machines to search in order:` lines leave 2.1.0 out,
    and the 2.0.0 log replayed as 2.0.1 clears every machine set aside, as its RM did."""
    with gzip.open(FIXTURES / "releases" / fixture / "rm.log.gz", "rt") as fh:
        lines = [ln for ln in fh if not BANNER_LINE.search(ln)]
    path = tmp_path / "rm.log"
    path.write_text("".join(lines))
    tables = dict(parse([path]).tables)
    result = audit(tables)
    got = result.rm_release
    assert got is not None and got.source == "inferred" and f"written by {span}," in got.evidence
    agrees_with_truth(f"releases/{fixture}", tables, result)
