"""A log line's header: the log4j PatternLayout of DUCC's log4j.xml (grammars/header.lark) as one
anchored regex, and its fields in order. Apart from replay.parsing.records so that what only
reads a header (the damage checks, anonymize) does not load the parse's numpy and pyarrow."""

# Rust regex (polars), no look-around.
HEADER_RE = (
    r"^(\d\d [A-Z][a-z][a-z] \d\d\d\d \d\d:\d\d:\d\d,\d\d\d) +(TRACE|DEBUG|INFO|WARN|ERROR|FATAL) +"
    r"(\S*)\.([^\s.]+) +- +(\S+) +T\[(\d*)\] +(\S+)(.*)"
)
HEADER_FIELDS = ["ts", "level", "component", "cls", "jid", "tid", "method", "body"]
