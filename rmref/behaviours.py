"""Where DUCC releases schedule differently: each difference a named behaviour, with the release
that brought it and the upstream change, so the phases test a behaviour and never a version.

`for_release(name)` gives the behaviours of one release (rmref.releases); the phases read them
from `Config.behaviours`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmref.releases import RELEASES, release


@dataclass(frozen=True)
class Change:
    """One behaviour change: its flag name, the first release that has it, the upstream issue, and what it does."""

    flag: str
    since: str  # rmref.releases name
    upstream: str  # e.g. "UIMA-4912"
    what: str


# Filled in as each difference is found and modelled; a flag is True from `since` on.
CHANGES: tuple[Change, ...] = ()


@dataclass(frozen=True)
class Behaviours:
    """The release whose behaviour rmref reproduces (the flags of CHANGES are read through `has`)."""

    release: str = RELEASES[-1].name

    def has(self, flag: str) -> bool:
        """Whether this release has the behaviour `flag` (a Change.flag)."""
        change = next((c for c in CHANGES if c.flag == flag), None)
        if change is None:
            raise KeyError(f"unknown behaviour {flag!r}")
        names = [r.name for r in RELEASES]
        return names.index(self.release) >= names.index(change.since)


def for_release(name: str) -> Behaviours:
    """The behaviours of the release called `name` (its name or banner version)."""
    return Behaviours(release(name).name)
