"""`rmreplay audit`: run rmref on every rebuilt cycle and compare its decisions with the logged ones.

Each phase is fed the RM's *logged* upstream decisions (What Of gets the logged counts, not
rmref's), so one divergence does not cascade: every divergent row is attributable to the phase
that produced it. A phase can be swapped (`rmref.Phases`) to replay history against a change, and
`only` limits the audit to some decision kinds.

Where rmref's own phase found several choices equal (an order no log shows decided it), a
logged choice among them is a verified choice: it agrees, is listed in `AuditResult.verified`,
and the rest of the cycle follows it (replay.apps.verify, docs/verified-choices.md).
"""

from replay.apps.audit.cycle import audit_cycle
from replay.apps.audit.output import DIVERGENCE_SCHEMA, REF_SCHEMAS, SKIPPED_SCHEMA, result_frames, write_audit
from replay.apps.audit.result import DECISIONS, AuditResult, Carried, Checkpoint, CycleTrace, Finding
from replay.apps.audit.run import audit, rerun, trace_cycle
from replay.model.start import PARTIAL_CYCLE  # where the tests and callers have read it

__all__ = ["DECISIONS", "DIVERGENCE_SCHEMA", "PARTIAL_CYCLE", "REF_SCHEMAS", "SKIPPED_SCHEMA", "AuditResult", "Carried",
           "Checkpoint", "CycleTrace", "Finding", "audit", "audit_cycle", "rerun", "result_frames", "trace_cycle",
           "write_audit"]
