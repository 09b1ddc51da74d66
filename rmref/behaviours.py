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


# Every difference between the releases' RM sources (uima-ducc-rm, and the uima-ducc-common classes it
# reads) that can change a scheduling decision or what the log shows, oldest first; a flag is True
# from `since` on. docs/releases.md says which ones rmref or the parser read, and how to add one.
CHANGES: tuple[Change, ...] = (
    Change("class_cap_in_kb", "2.1.0", "UIMA-4569",
           "a fair-share class's cap (ResourceClass.calculateCap) is Integer.MAX_VALUE over its pool's "
           "quantum in KB: 409 quantum shares at a 5 GB quantum, 2,047 at 1 GB; before, over the quantum "
           "in GB, a cap no cluster reaches"),
    Change("service_horizontal_stacking", "2.1.0", "UIMA-4712",
           "processes of one service instance never share a machine (findShares skips a machine that "
           "already runs one of the service's processes); before, services stacked vertically like jobs"),
    Change("subpools_for_fair_share_only", "2.1.0", "UIMA-4712",
           "findShares looks in a pool's subpools only for fair-share work; before, fixed-share work "
           "that found no room in its class's pool took free space in the subpools (children ascending)"),
    Change("purge_by_policy", "2.1.0", "UIMA-4742",
           "vary-off purges only fair-share processes, node death every process but reservations, and "
           "the machine stays in its pool's tables; before, NodePool.disable purged every process (stopping "
           "at the first reservation's) and removed the machine from the pool's tables"),
    Change("vary_on_at_once", "2.1.0", "UIMA-4742",
           "a vary-on makes the machine schedulable at once (it never left the pool's tables); before, "
           "it only left the offline list, and the machine rejoined its pool, empty, at its next report"),
    Change("unusable_nodes_skipped", "2.1.0", "UIMA-4910",
           "findShares, findMachines and the free-machine counts test isSchedulable (responsive, online, "
           "not blacklisted), as disabled machines now stay in the tables; before, blacklisting only"),
    Change("freeable_by_eviction_cost", "2.1.0", "UIMA-4912",
           "machines a reservation could free are sorted by eviction cost (free first, then the eviction "
           "policy's cost), and unusable machines are not counted as schedulable; before, by size"),
    Change("free_space_clamped", "2.1.0", "UIMA-4913",
           "rearrangeVirtual counts a machine whose process is larger than its free space as full, and a "
           "reservation as taking the whole machine; before, the free space was lowered by the order"),
    Change("init_wait_without_item_time", "2.1.0", "UIMA-4882",
           "a job with no recorded work-item time yet is capped as still initializing (no prediction "
           "cap); the mean item time is skewed by the active items"),
    Change("reserve_overage", "2.2.0", "UIMA-5086",
           "an unmanaged reservation may take a machine up to ducc.rm.reserve_overage GB larger than "
           "asked (the job's order is upgraded to the machine's); the banner prints 'reserve overage'"),
    Change("clearing_order_per_share", "2.2.0", "UIMA-5086",
           "setupPreemptions reuses its order variable for each share it evicts, so after the first machine "
           "where it evicts one it clears only machines of the last evicted share's order; before, every "
           "machine set aside of the request's order, up to the shortfall"),
    Change("info_logging_reduced", "2.2.0", "UIMA-5190",
           "doEvictions' table header names the nodepool last; 'Schedule class', 'Recurse to', the "
           "Scheduler's returned schedule and the 'Machine occupancy before schedule' listing go to DEBUG"),
    Change("jd_class_user_restricted", "2.2.2", "UIMA-5618",
           "the JobDriver class (ducc.jd.host.class) authorizes ducc.jd.host.user, which restricts it "
           "to that user when it has no other users list; the RM logs 'jd.host.class=... jd.host.user=...'"),
    Change("resize_keeps_free_space", "2.2.2", "UIMA-5605",
           "a machine whose size (in quanta) changes keeps its processes' space: free = new order - in use"),
    Change("node_ip_logged", "3.0.0", "UIMA-5742",
           "findNodepoolByRule logs each arriving node's name, short name and IP; before, the log never "
           "shows a node's IP, which is half of the key the RM's node maps are hashed on"),
    Change("nodepool_regex_rules", "3.0.0", "UIMA-5742",
           "a nodepool's nodefile ending in .regex is a host-name pattern; in 3.0.0 a node that matches "
           "no rule goes to the last rule's pool when any rule exists (fixed by UIMA-6097)"),
    Change("quiesced_nodes_unschedulable", "3.0.0", "UIMA-5928",
           "a node whose agent reports UnAvailable (quiesced) is not schedulable until it reports again"),
    Change("regex_rule_fallthrough_fixed", "trunk", "UIMA-6097",
           "a node that matches no .regex rule falls back to its nodefile pool, then the default pool"),
    Change("completed_work_not_recovered", "trunk", "UIMA-6077",
           "recovery at RM start skips completed work and logs completed processes with their node"),
    Change("user_machine_list", "trunk", "UIMA-6161",
           "work may name the machines it may run on (--machine_list): findShares, findMachines and the "
           "free counts skip others, and a job with none eligible waits 'No machines match user specified list.'"),
)


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
