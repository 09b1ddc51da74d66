"""rmref: a pure reference implementation of one DUCC RM scheduling cycle (inputs in, decisions out).

No I/O and no import of `replay` or `tui`. The phases (job caps, How Much, What Of, evictions,
defragmentation) arrive with issue 3; `replay` already parses every input they need.
"""
