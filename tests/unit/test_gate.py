"""`check --simulate`'s JUnit XML: any gate text survives the document (ElementTree escapes it)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from hypothesis import given
from hypothesis import strategies as st

from replay.apps.simulate.gate import Gate, junit_xml

# XML 1.0 cannot carry control characters other than tab, newline and carriage return
TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=40)


@given(name=TEXT, message=TEXT, ok=st.booleans(), log=TEXT)
def test_gate_text_round_trips(name, message, ok, log):
    doc = junit_xml([(log, [Gate(name, ok, message)], {"cycles": 3, "other": 1}, 0.5)])
    root = ET.fromstring(doc)
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == log
    assert (root.get("tests"), root.get("failures")) == ("1", "0" if ok else "1")
    case = suite.find("testcase")
    assert case is not None and case.get("name") == name
    failure = case.find("failure")
    assert (failure is None) == ok
    if failure is not None:
        assert failure.get("message") == message and failure.text == (message or None)
    assert json.loads(suite.findall("system-out")[-1].text or "") == {"cycles": 3}
