"""Families grouped by what they record, for the parse summary and the TUI's colours."""

from __future__ import annotations

# In the order of the RM's cycle: bootstrap, nodes, jobs, caps, How Much, What Of, evictions,
# defragmentation, the published schedule.
GROUPS = {
    "bootstrap": ("np_", "class_", "user_", "property", "init_param", "jd_host"),
    "nodes": ("node_",),
    "jobs and processes": ("ev_", "job_", "proc_", "submit", "jobs_arrive", "recovered", "how_much"),
    "job caps": ("prj_", "init_job_cap"),
    "how much": ("rmc_", "fixed_", "res_", "defer", "allot_", "what_of"),
    "what of": ("connect_", "expansion", "do_expansion", "find_", "freeable_", "needy_"),
    "evictions": ("evict_", "shrink_by", "clear_for", "schedule_removal", "share_removed", "non_preempt"),
    "defragmentation": ("frag_", "rich_", "clear_share"),
    "schedule and cycles": ("schedule_", "loop_", "total_arrivals", "sched_sections"),
    "occupancy and tables": ("occupancy_", "pool_tables"),
    "generic messages": ("message",),
}


def family_group(family: str) -> str:
    """The summary group a family is counted in (GROUPS; "other" when none claims it)."""
    for name, prefixes in GROUPS.items():
        if family.startswith(prefixes):
            return name
    return "other"
