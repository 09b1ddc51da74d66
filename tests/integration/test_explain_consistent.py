"""`explain` never contradicts itself, and gives wall-clock time beside cycle counts.

The RM publishes "Waiting for preemptions." for any job its placement pass leaves with no process
and "Waiting for defragmentation." for a needy job still holding nothing after takeFromTheRich,
satisfied or not (NodepoolScheduler, NodePool). Against truth.jsonl (the real RM's count, reason
and shares per job and cycle): wherever a job waits, explain's words agree with the count it
prints (truth's nshares_given) and with what defragmentation did; a wait lasts as many cycles,
and as long, as truth's run of that reason.
"""

from __future__ import annotations

import pytest

from replay.apps.explain import explain_job, render
from replay.model.cycleref import duration_words
from tests.helpers import parsed, truth


def _waiting(name: str) -> list[tuple[int, int, dict]]:
    """(cycle, job, truth's job record) of every published reason (cycle = truth's 1-based cycle)."""
    epochs = dict(parsed(name).tables["cycles"].select("epoch", "cycle").iter_rows())
    return [(epochs[r["epoch"]], j["id"], j) for r in truth(name) for j in r["jobs"]
            if j["reason"] in ("Waiting for preemptions.", "Waiting for defragmentation.") and r["epoch"] in epochs]


@pytest.mark.parametrize("name", ["b_classes", "h_mega15", "d_fragmentation"])
def test_the_waiting_words_agree_with_the_count_and_defragmentation(name):
    tables = parsed(name).tables
    seen = set()
    for cycle, job, rec in _waiting(name)[:40]:
        story = explain_job(tables, job, cycle)
        text = render(story)
        assert story.count in (None, rec["nshares_given"])  # the count it prints is the RM's
        given = rec["nshares_given"] if story.count is None else story.count
        if given == 0:
            assert "was counted" not in text and "no machine had room" not in text, (cycle, job)
        if "satisfied it by taking from the rich" in text:
            assert "could not" not in text.split("8. What it waits for")[1], (cycle, job)
        seen.add(rec["reason"])
    assert seen


def test_a_wait_is_given_in_cycles_and_wall_clock_time():
    """b_classes job 1 waits for preemptions from epoch 15 to the end: 51 cycles, 500 s (truth's t)."""
    records = truth("b_classes")
    run = [i for i, r in enumerate(records)
           if any(j["id"] == 1 and j["reason"] == "Waiting for preemptions." for j in r["jobs"])]
    first, last = records[run[0]], records[run[-1]]
    end = records[run[-1] + 1]["t"] if run[-1] + 1 < len(records) else last["t"]
    expected = f"for {len(run)} cycles ({duration_words((end - first['t']) / 1000)})"
    assert expected == "for 51 cycles (8 min)"
    life = explain_job(parsed("b_classes").tables, 1).life
    assert any(e.text == f"waits: Waiting for preemptions. ({expected})" for e in life)
    story = render(explain_job(parsed("b_classes").tables, 1))
    assert "How Much gave it 0" in story and "That is, How Much gave it nothing this cycle" in story


def test_duration_words():
    assert [duration_words(s) for s in (0, 59, 60, 3599, 3600, 17_520, 86_400, 97_200)] == [
        "0 s", "59 s", "1 min", "59 min", "1 h", "4 h 52 min", "1 d", "1 d 3 h"]
