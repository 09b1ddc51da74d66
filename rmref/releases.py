"""The DUCC releases rmreplay knows, oldest first: the one list every other module reads.

A release's name is what its rm.log banner prints as `DUCC Version` (its pom's version); `tag` is
the upstream git tag (or commit) its RM is built from. `trunk` is the unreleased build the project
was first modelled on (fd8cab1df, whose banner says 3.0.1-SNAPSHOT).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Release:
    """One DUCC release: its banner version, the upstream tag it is built from, its place in time."""

    name: str
    tag: str
    banner: str  # the `DUCC Version` its rm.log prints


RELEASES: tuple[Release, ...] = (
    Release("2.0.0", "uima-ducc-2.0.0", "2.0.0"),
    Release("2.0.1", "uima-ducc-2.0.1", "2.0.1"),
    Release("2.1.0", "uima-ducc-2.1.0", "2.1.0"),
    Release("2.2.0", "uima-ducc-2.2.0", "2.2.0"),
    Release("2.2.1", "uima-ducc-2.2.1", "2.2.1"),
    Release("2.2.2", "uima-ducc-2.2.2", "2.2.2"),
    Release("3.0.0", "uima-ducc-3.0.0", "3.0.0"),
    Release("trunk", "fd8cab1df", "3.0.1-SNAPSHOT"),
)
LATEST = RELEASES[-1]


def release(name: str) -> Release:
    """The release called `name` (its name or its banner version); KeyError names the known ones."""
    for r in RELEASES:
        if name in (r.name, r.banner):
            return r
    raise KeyError(f"unknown DUCC release {name!r}; known: {', '.join(r.name for r in RELEASES)}")
