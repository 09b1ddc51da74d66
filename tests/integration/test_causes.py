"""A divergence is explained by the first step where rmref and the RM part.

Each test plants a difference in one input rmref reads (the log keeps the real RM's), reruns the
cycle's audit, and asks that the divergence name the step and the entity the difference is in.
Hypothesis picks the cycle, the class or machine, and the size of the change.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache

from hypothesis import given, settings
from hypothesis import strategies as st

from replay.apps.audit import AuditResult, audit_cycle
from replay.model.logged import logged_decisions
from replay.model.start import cycle_inputs
from rmref import Phases
from tests.helpers import parsed

NAME = "b_classes"  # five fair-share classes of one nodepool compete


@lru_cache(maxsize=None)
def _cycles():
    tables = parsed(NAME).tables
    inputs = [inp for inp in cycle_inputs(tables)
              if len({w.class_name for w in inp.work
                      if inp.class_of(w) and inp.class_of(w).policy == "FAIR_SHARE"}) >= 2]
    return inputs, logged_decisions(tables)


def _divergences(inp):
    _, logged = _cycles()
    result = AuditResult()
    audit_cycle(inp, logged, Phases(), result, ("counts",))
    return [d for d in result.divergences if d.decision == "counts"]


@settings(max_examples=15)
@given(st.data())
def test_a_changed_class_weight_is_named_at_the_class_count(data):
    inputs, _ = _cycles()
    inp = data.draw(st.sampled_from(inputs))
    fair = sorted({w.class_name for w in inp.work if inp.class_of(w).policy == "FAIR_SHARE"})
    name = data.draw(st.sampled_from(fair))
    cls = next(c for c in inp.classes if c.name == name)
    weight = data.draw(st.sampled_from([w for w in (1, 3, 7, 1000, 5000) if w != cls.weight]))
    changed = replace(inp, classes=tuple(replace(c, weight=weight) if c.name == name else c for c in inp.classes))
    for d in _divergences(changed):
        assert d.step == "countClassShares", d.explanation
        assert f"{name} weighs {cls.weight} for the RM, {weight} for rmref" in d.detail, d.explanation


@settings(max_examples=15)
@given(st.data())
def test_a_missing_machine_is_named_as_the_free_space_the_classes_divide(data):
    inputs, _ = _cycles()
    inp = data.draw(st.sampled_from(inputs))
    gone = data.draw(st.sampled_from([m.name for m in inp.machines if m.online]))
    changed = replace(inp, machines=tuple(m for m in inp.machines if m.name != gone),
                      work=tuple(replace(w, shares=tuple(s for s in w.shares if s.host != gone)) for w in inp.work))
    for d in _divergences(changed):
        assert d.step == "countClassShares", d.explanation
        assert "they divide different free space" in d.detail, d.explanation


def test_an_unchanged_cycle_has_no_divergence_to_explain():
    inputs, _ = _cycles()
    assert all(not _divergences(inp) for inp in inputs[:20])
