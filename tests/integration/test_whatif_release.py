"""`whatif --set release=R`: the recorded history replayed under another release's scheduling.

The baseline keeps the release that wrote the log (its banner); only the what-if side takes R.
fixtures/releases/2.0.1/gen12-004 is the real 2.0.1 RM: under 2.2.2's behaviours (service
stacking and the free-space clamp came in 2.1.0) some placements change, under 2.0.1 none do.
"""

from __future__ import annotations

import json

import pytest

from replay.apps.change import apply_sets
from replay.cli import main
from replay.model.start import bootstrap
from replay.parsing.sources import InputError
from rmref.behaviours import for_release
from tests.helpers import FIXTURES, parsed

NAME = "releases/2.0.1/gen12-004"


def test_the_change_side_takes_the_release_and_the_baseline_keeps_the_logs():
    boot = bootstrap(parsed(NAME).tables)
    assert boot.config.behaviours == for_release("2.0.1")
    assert apply_sets(boot, [("release", "2.2.2")]).config.behaviours == for_release("2.2.2")


def test_an_unknown_release_is_refused():
    with pytest.raises(InputError, match="unknown DUCC release"):
        apply_sets(bootstrap(parsed(NAME).tables), [("release", "1.9")])


@pytest.mark.parametrize(("name", "release", "changes"), [
    (NAME, "2.0.1", False), (NAME, "2.2.2", True),
    ("releases/2.0.1/a_tiny", "2.0.1", False),
    ("releases/2.0.1/a_tiny", "2.2.2", True),  # only the initialization rule parts them here
])
def test_whatif_release(tmp_path, name, release, changes):
    out = tmp_path / "wi"
    main(["whatif", str(FIXTURES / name / "rm.log.gz"), "--set", f"release={release}", "-o", str(out)])
    report = json.loads((out / "report.json").read_text())
    assert (report["cycles_changed"] > 0) is changes


def test_the_jobs_cap_inputs_take_the_release_too():
    """initJobCap reads the release from each job's cap input (rmref.caps.waiting): the 2.0.1 log
    doubles job 1 before it has a work-item time, which 2.2.2 would not (UIMA-4882)."""
    from replay.apps.change import adapt
    from replay.model.start import cycle_inputs

    tables = parsed("releases/2.0.1/a_tiny").tables
    boot = bootstrap(tables)
    after = apply_sets(boot, [("release", "2.2.2")])
    for inp in cycle_inputs(tables, boot):
        for work in adapt(inp, boot, after).work:
            assert work.cap_input.behaviours == for_release("2.2.2")
