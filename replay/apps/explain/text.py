"""Words: small wording helpers shared by the sections, `render` (a story as plain text) and `story_json`."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import asdict
from fractions import Fraction

from replay.apps.explain.story import Story
from replay.model.cycleref import label
from replay.model.settings import shown
from rmref import UNLIMITED


def id_ranges(ids: Iterable[int]) -> str:
    """1, 2, 3, 7 -> '1-3, 7' (at most a dozen runs, then '...')."""
    runs: list[list[int]] = []
    for i in sorted(set(ids)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    text = [f"{a}-{b}" if a != b else str(a) for a, b in runs[:12]]
    return ", ".join(text) + (", ..." if len(runs) > 12 else "")


def plural(n: int, word: str) -> str:
    """`n` and the word, in the plural unless n is 1."""
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def cap_text(value: int | None) -> str:
    """A cap as text: "-" when unknown, "unlimited" at or above UNLIMITED."""
    if value is None:
        return "-"
    return "unlimited" if value >= UNLIMITED else str(value)


def by_order(vector: Sequence[int]) -> str:
    """A wanted/given vector (index 0 the total) as '3 of order 2, 1 of order 1'."""
    parts = [f"{n} of order {o}" for o, n in reversed(list(enumerate(vector))) if o and n]
    return ", ".join(parts) if parts else "nothing"


def spaces_text(vmachines: Sequence[int]) -> str:
    """The resource vector as '2 spaces of 8 quanta, 1 of 4'."""
    parts = [f"{n}×{size}Q" for size, n in reversed(list(enumerate(vmachines))) if size and n]
    return " + ".join(parts) if parts else "no free space"


def fraction(part: int, whole: int) -> str:
    """A weight share in words: 'a third', 'half', '2/5', 'all'."""
    if whole <= 0:
        return "nothing"
    f = Fraction(part, whole)
    words = {Fraction(1): "all", Fraction(1, 2): "half", Fraction(1, 3): "a third", Fraction(2, 3): "two thirds",
             Fraction(1, 4): "a quarter", Fraction(3, 4): "three quarters"}
    return words.get(f, f"{f.numerator}/{f.denominator}")


def _summary(story: Story) -> str:
    hosts: dict[str, int] = {}
    for h in story.hosts:
        hosts[h] = hosts.get(h, 0) + 1
    where = ", ".join(f"{n} on {h}" for h, n in hosts.items())
    count = f"How Much gave it {story.count}" if story.count is not None else "no How Much count logged"
    return (f"Cycle {label(story.cycle, story.epoch)}: {count} (cap {cap_text(story.actual_cap)}); it holds "
            f"{plural(len(story.shares), 'process')} after the cycle" + (f": {where}." if where else "."))


def render(story: Story) -> str:
    """The story as plain text."""
    epochs = (f" (epochs {story.first_epoch}-{story.last_epoch})"
              if story.first_epoch is not None and story.last_epoch is not None else "")
    head = (f"{story.work_type} {story.job_id}: user {story.user}, class {story.class_name}"
            f" ({story.policy or 'unknown policy'}), published in cycles {story.first_cycle}-{story.last_cycle}"
            + epochs)
    out = [head, "=" * len(head), _summary(story)]
    if story.not_audited and story.not_audited.startswith("partly: "):
        out.append(f"Audited {story.not_audited}.")
    elif story.not_audited:
        out.append(f"Not audited: {story.not_audited}; what follows is the log's side only.")
    if story.assumed:
        out.append("Settings the log does not state, as every command reads them (report.json 'assumed'): "
                   + ", ".join(shown(story.assumed)) + ".")
    out.append("")
    if story.damaged:
        out[-1:-1] = [f"Cycle {story.cycle}: input damaged, not audited ({story.damaged}): the log does not show "
                      "what the RM saw there, so nothing here is a verdict on it."]
    for section in story.sections:
        out.append(section.title)
        out += [f"  {line}" for line in section.lines]
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def story_json(story: Story) -> str:
    """The story as JSON: every fact (cycles with their epochs) and the sections' words."""
    return json.dumps(asdict(story), indent=2)
