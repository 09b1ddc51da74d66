"""The JUnit XML `rmreplay check` writes (both gates): suites of test cases, one document."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Failure:
    """Why a test case failed: a one-line message, its type, and the detail."""

    message: str
    type: str
    text: str


@dataclass(frozen=True)
class Case:
    """One gate: its class and name, time, what it printed, and its failure if it failed."""

    classname: str
    name: str
    time: str
    output: str
    failure: Failure | None = None


@dataclass(frozen=True)
class Suite:
    """One log's gates, with the suite's properties and its own output."""

    name: str
    time: str
    cases: tuple[Case, ...]
    properties: tuple[tuple[str, str], ...] = ()
    output: str | None = None


def junit_xml(title: str, suites: Sequence[Suite]) -> str:
    """The JUnit XML document of `suites` (one per log), as CI servers read it."""
    failures = [sum(c.failure is not None for c in s.cases) for s in suites]
    root = ET.Element("testsuites", name=title, tests=str(sum(len(s.cases) for s in suites)),
                      failures=str(sum(failures)))
    for suite, failed in zip(suites, failures):
        node = ET.SubElement(root, "testsuite", name=suite.name, tests=str(len(suite.cases)), failures=str(failed),
                             errors="0", time=suite.time)
        if suite.properties:
            props = ET.SubElement(node, "properties")
            for key, value in suite.properties:
                ET.SubElement(props, "property", name=key, value=value)
        for case in suite.cases:
            element = ET.SubElement(node, "testcase", classname=case.classname, name=case.name, time=case.time)
            if case.failure is not None:
                ET.SubElement(element, "failure", message=case.failure.message,
                              type=case.failure.type).text = case.failure.text
            ET.SubElement(element, "system-out").text = case.output
        if suite.output is not None:
            ET.SubElement(node, "system-out").text = suite.output
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
