"""`rmreplay simulate`: the recorded workload replayed closed loop through rmref, with or without a change.

    workload     the workload table (work, node events, processes at the start): read, validate, write
    reconstruct  the workload a log records
    fit          work-item times that replay the log's completions
    orchestrator the simulated Orchestrator: processes, work items, the life of each piece of work
    rm           the RM's bookkeeping between cycles (job table, share ids, the projected cap)
    loop         the closed loop, cycle by cycle
"""
