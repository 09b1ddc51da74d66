"""Which fragmentation threshold a log's defragmentation supports, decided (replay.model.threshold):
hand-worked fits of values tried against the cycles that tell them apart."""

from __future__ import annotations

from replay.model.bootstrap import Bootstrap
from replay.model.settings import THRESHOLD, Assumption
from replay.model.threshold import ThresholdFit, threshold_decided
from rmref.model import Config

TRIED = tuple(range(0, 11))  # the log allows 0 to 10; 8 (the documented default) assumed
OPEN = tuple(sorted((t for t in TRIED if t != 8), key=lambda t: (abs(t - 8), t)))
BOOT = Bootstrap(Config(fragmentation_threshold=8), (), (),
                 (Assumption(THRESHOLD, "8", "default", "no detectFragmentation row bounds it"),), thresholds_open=OPEN)


def _threshold(boot: Bootstrap) -> Assumption:
    return next(a for a in boot.assumed if a.setting == THRESHOLD)


def test_one_value_is_inferred_and_every_cycle_audited():
    """Cycles 4 and 6 took from a job holding 1 process: only 1 reproduces both."""
    boot = threshold_decided(BOOT, ThresholdFit(TRIED, (1,), (4, 6), alike=True))
    said = _threshold(boot)
    assert (boot.config.fragmentation_threshold, boot.thresholds_open, said.value, said.source) == (1, (), "1",
                                                                                                    "inferred")
    assert said.evidence.startswith("fragmentation threshold inferred: 1 (from cycles 4, 6): the only value")


def test_values_that_decide_alike_everywhere_pin_it_at_the_nearest():
    """5 to 9 all reproduce every cycle that tells, and decide alike in every other: 8 stays, inferred."""
    boot = threshold_decided(BOOT, ThresholdFit(TRIED, (5, 6, 7, 8, 9), (3,), alike=True))
    assert (boot.config.fragmentation_threshold, boot.thresholds_open, _threshold(boot).source) == (8, (), "inferred")
    assert "5 to 9 are the values" in _threshold(boot).evidence


def test_values_that_decide_differently_stay_open():
    """2 and 3 reproduce every cycle that tells, and part elsewhere: 3 (nearest 8) runs, 2 stays open."""
    boot = threshold_decided(BOOT, ThresholdFit(TRIED, (2, 3), (3, 9), alike=False))
    assert (boot.config.fragmentation_threshold, boot.thresholds_open) == (3, (2,))
    assert "decide differently" in _threshold(boot).evidence


def test_no_value_explains_the_rm_and_the_assumption_stays_saying_so():
    """Cycle 3 is reproduced by 1 alone, cycle 5 by 4 alone: none reproduces both."""
    boot = threshold_decided(BOOT, ThresholdFit(TRIED, (), (3, 5), alike=True))
    said = _threshold(boot)
    assert (boot.config.fragmentation_threshold, boot.thresholds_open, said.value, said.source) == (8, OPEN, "8",
                                                                                                    "default")
    assert "no value the log allows (0 to 10) reproduces" in said.evidence and "cycles 3, 5" in said.evidence


def test_a_log_whose_cycles_tell_no_value_apart_keeps_its_assumption():
    boot = threshold_decided(BOOT, ThresholdFit(TRIED, TRIED, (), alike=False))
    assert (boot.config, boot.assumed, boot.thresholds_open, boot.threshold_settled) == (
        BOOT.config, BOOT.assumed, OPEN, True)
