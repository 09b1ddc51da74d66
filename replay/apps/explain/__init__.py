"""`rmreplay explain`: the story of one job in plain words, read from the parsed tables.

Without a cycle: the job's life (arrival, every cycle the processes it holds change, its end),
then the detail of its last published cycle. The detail of one cycle walks every level the RM
went through, in the spirit of kubectl's "0/5 nodes are available: ...":

1. the job (user, class, memory and share order, threads, work left);
2. its cap chain (rmref's `job_caps` on the rebuilt input, beside the logged one) and the binding rule;
3. what its class got among the classes of the nodepool (the countClassShares RmCounter block);
4. its user's part among the users of the class (countUserShares);
5. its own count among the user's jobs (countJobShares) and the count the RM logged;
6. where each new process went and why that host;
7. what was preempted or taken by defragmentation;
8. what it waited for.

`explain_job` gathers the facts (typed fields, for tests and the TUI) and the sections;
`render` prints them as plain text.

    from replay.apps.explain import explain_job, render
    print(render(explain_job(tables, job_id=42)))

Inside: `story` (the records), `lookup` (which job, which cycle), `facts`, `taken`, `counting`
and `life` (facts from the tables), `sections` and `text` (the words), `build` (the assembly).
"""

from replay.apps.explain.build import explain_job
from replay.apps.explain.story import (Competitor, Counting, HeldShare, LifeEvent, LoggedCaps, Placed, Section, Story,
                                      Taken)
from replay.apps.explain.text import render, story_json

__all__ = [
    "Competitor", "Counting", "HeldShare", "LifeEvent", "LoggedCaps", "Placed", "Section", "Story", "Taken",
    "explain_job", "render", "story_json",
]
