"""The schedule divergence's words: a cycle may publish hundreds of additions on a few hosts."""

from replay.apps.audit.schedule import _published


def test_additions_name_each_run_of_a_host_once():
    assert _published((["n01", "n01", "n01", "n02", "n01"], [("n03", 7)])) == (
        "additions on n01 ×3, n02, n01; removals n03.7")
    assert _published(([], [])) == "nothing"
