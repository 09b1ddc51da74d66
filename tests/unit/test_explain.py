"""explain's pieces on hand-built inputs: words, the RmCounter chain, defragmentation inference, render."""

from __future__ import annotations

import polars as pl

from replay.apps.explain import Competitor, Counting, HeldShare, Section, Story, Taken, render
from replay.apps.causes import award, chain
from replay.apps.explain.sections import rule_words
from replay.apps.explain.taken import rich_takings
from replay.apps.explain.text import by_order, fraction, id_ranges, spaces_text
from replay.model.inputs import CounterBlock
from replay.parsing.tables import SCHEMAS, conform
from rmref import CapInput, Caps, CounterRun, job_caps
from rmref.apportion import Entity


def test_ranges_compress_runs():
    assert id_ranges([7, 1, 2, 3, 9, 10]) == "1-3, 7, 9-10"
    assert id_ranges(range(0, 100, 2)).endswith(", ...")


def test_weight_share_in_words():
    assert fraction(100, 300) == "a third"
    assert fraction(200, 500) == "2/5"
    assert fraction(1, 1) == "all"


def test_vectors_in_words():
    assert by_order([5, 2, 3]) == "3 of order 2, 2 of order 1"
    assert by_order([0, 0]) == "nothing"
    assert spaces_text([0, 0, 0, 0, 1, 0, 0, 0, 2]) == "2×8Q + 1×4Q"


def _cap(**kw) -> CapInput:
    base = dict(remaining=400, threads=4, current=1, max_processes=2147483647, initialized=False, projected=0,
                init_cap=1, expand_by_doubling=True, use_prediction=False)
    return CapInput(**(base | kw))


def test_rule_words_say_which_rule_bound_the_job():
    cap = _cap()
    caps = job_caps(cap)
    assert caps.rule == "initialization_cap"
    assert rule_words(caps, cap).startswith("capped at 1 by the class's initialization cap")
    cap = _cap(initialized=True, current=3)
    assert "twice the 3 processes" in rule_words(job_caps(cap), cap)
    cap = _cap(initialized=True, expand_by_doubling=False, remaining=10)
    assert "10 work items / 4 threads rounded up = 3" in rule_words(job_caps(cap), cap)


def _block(i: int, descr: str, names: list[str], vm: tuple[int, ...] = (0, 0, 2)) -> CounterBlock:
    return CounterBlock(5, i, descr, tuple(Entity(n, 1, (1, 0, 1)) for n in names), vm, None)


def test_the_chain_pairs_each_run_with_the_block_of_the_same_count():
    """Class blocks (subpool, then the parent), then per class its users and per user its jobs: two
    classes with the same users pair by occurrence, not by the last block of those users."""
    blocks = [
        _block(1, "countClassShares", ["b"]),
        _block(2, "countClassShares", ["a", "b"]),
        _block(3, "countUserShares", ["bob"]),  # class a
        _block(4, "countJobShares", ["10"]),
        _block(5, "countUserShares", ["bob"]),  # class b: bob again
        _block(6, "countJobShares", ["12"]),
    ]
    runs = [_run("countClassShares", "sub", ["b"]), _run("countClassShares", "top", ["a", "b"]),
            _run("countUserShares", "a", ["bob"]), _run("countJobShares", "a/bob", ["10"]),
            _run("countUserShares", "b", ["bob"]), _run("countJobShares", "b/bob", ["12"])]
    levels = chain(runs, blocks, "b", "bob", 12, {"bob"}, {"12"})
    assert [lv.block.block for lv in levels] == [2, 5, 6]
    levels = chain(runs, blocks, "a", "bob", 10, {"bob"}, {"10"})
    assert [lv.block.block for lv in levels] == [2, 3, 4]
    # INFO: a level's award is the next level's resource vector
    assert award(levels[0], levels[1]) == blocks[2].vmachines


def _run(descr: str, scope: str, names: list[str]) -> CounterRun:
    return CounterRun(descr, scope, tuple(Entity(n, 1, (2, 2)) for n in names), (0, 4), {n: (1, 1) for n in names})


def _defrag(rows: list[dict]) -> pl.DataFrame:
    return conform(pl.DataFrame(rows), SCHEMAS["defrag"])


def test_unexplained_removals_go_to_needy_jobs_in_order():
    """Each needy job takes removals on the machines it searched until its need is covered."""
    tables = {"defrag": _defrag([
        {"cycle": 4, "job_id": 3, "kind": "needy", "needed": 1, "order": 4},
        {"cycle": 4, "job_id": 5, "kind": "needy", "needed": 1, "order": 2},
        {"cycle": 4, "job_id": 3, "kind": "eligible_machines", "hosts": ["h1", "h2"]},
        {"cycle": 4, "job_id": 5, "kind": "eligible_machines", "hosts": ["h2"]},
    ])}
    removals = [Taken("h1", 1, 2, "removal"), Taken("h1", 2, 2, "removal"), Taken("h2", 3, 2, "removal")]
    assert rich_takings(tables, 4, removals) == {("h1", 1): 3, ("h1", 2): 3, ("h2", 3): 5}


def test_render_prints_every_section():
    counting = Counting("countJobShares", 3, (2, 0, 2), (Competitor("7", 1, (4, 0, 4), (2, 0, 2)),), True, "7")
    story = Story(
        job_id=7, cycle=5, first_cycle=1, last_cycle=9, work_type="Job", user="ann", class_name="normal",
        policy="FAIR_SHARE", nodepool="--default--", memory_gb=8, order=2, threads=4, remaining=40, count=2,
        logged_caps=None, caps=Caps(10, 10, 10, 4, "doubling"),
        shares=(HeldShare("h1", 1, 2), HeldShare("h1", 2, 2, new=True)), placed=(), taken=(), reason=None,
        classes=None, users=None, jobs=counting, life=(),
        sections=(Section("1. The job", ("Job 7 of user ann.",)), Section("5. Count", ("got 2",))),
    )
    text = render(story)
    assert text.startswith("Job 7: user ann, class normal (FAIR_SHARE), published in cycles 1-9\n")
    assert "Cycle 5: How Much gave it 2 (cap 4); it holds 2 processes after the cycle: 2 on h1." in text
    assert "1. The job\n  Job 7 of user ann.\n" in text and "5. Count\n  got 2\n" in text
    assert story.hosts == ("h1", "h1") and story.actual_cap == 4
