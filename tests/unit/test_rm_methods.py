"""The methods each RM class logs (replay.parsing.rm_methods), held to the real RM's logs: every
bundled log was written by the real RM (the releases' builds), and each (class, METHOD) it holds
of a listed class is on the list; so is every (class, METHOD) the parser routes."""

from __future__ import annotations

import gzip
import re

from replay.parsing.families import ROUTES
from replay.parsing.rm_methods import LOGGED_METHODS, logs_method
from tests.helpers import FIXTURES

_HEAD = re.compile(rb"^\d\d [A-Z][a-z][a-z] \d{4} [\d:,]{12} +[A-Z]+ +\S*\.([^\s.]+) +- +\S+ +T\[\d*\] +(\S+)", re.M)


def test_every_method_the_bundled_logs_show_of_a_listed_class_is_listed():
    pairs: set[tuple[str, str]] = set()
    for path in sorted(FIXTURES.rglob("rm*.log*")):
        data = path.read_bytes()
        data = gzip.decompress(data) if path.suffix == ".gz" else data
        pairs |= {(c.decode(), m.decode()) for c, m in _HEAD.findall(data)}
    listed = {(c, m) for c, m in pairs if c in LOGGED_METHODS}
    assert len(listed) > 60  # the logs do name the RM's classes
    assert [p for p in sorted(listed) if not logs_method(*p)] == []


def test_every_routed_method_of_a_listed_class_is_listed():
    assert [(c, m) for c, m in ROUTES if not logs_method(c, m)] == []


def test_a_method_is_suspect_only_in_a_listed_class():
    assert not logs_method("NodePool", "countFr")
    assert logs_method("NodePool", "countFreeableMachines")
    # its logger prints the methods of DUCC's common component code too
    assert logs_method("ResourceManagerComponent", "anything")
