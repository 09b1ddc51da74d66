"""Share orders: memory expressed in quanta (Scheduler.calcShareOrder for jobs, Scheduler.nodeArrives for machines)."""

from __future__ import annotations

from rmref.constants import KB_PER_GB


def job_order(memory_gb: int, quantum_gb: int) -> int:
    """Quanta per process of a job: its declared memory over the quantum, rounded UP."""
    return -(-memory_gb // quantum_gb)


def machine_order(memory_kb: int, quantum_gb: int) -> int:
    """Quanta a machine can hold: its allocatable memory over the quantum, rounded DOWN."""
    return memory_kb // (quantum_gb * KB_PER_GB)


def processes_for_qshares(qshares: int, order: int) -> int:
    """How many processes `qshares` quantum shares buy a job of this order."""
    return qshares // order
