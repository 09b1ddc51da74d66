"""Token templates: the high-volume families, matched by the compiled scanner (replay._scan).

A template spells a single-line body the way the grammar does, blank-separated tokens:
  `word`             a literal token;
  `{name}`           any token, kept as the string field `name` (`{_}`: any token, not kept);
  `{name:int}`       an integer token;
  `pre{name}suf`     a token with a literal prefix and/or suffix around the field;
  `{a,b:typed}`      a typed job id `[JSMRA?]_*digits`: its letter to `a`, its digits to `b`;
  `{name:ints*}`     every remaining token, integers, as a list (`{name:words*}`: any tokens);
  `[words]{name}`    optional trailing words (one space apart), kept as `name` when present.
Field names are the grammar's (and replay.fast's regex groups'), so the rows are the rows the
regex and lark paths give; tests/integration/test_engines.py holds all three to the same tables.
A body a template does not match is not an error: it goes on to the regex path, then to lark.
The matching itself is replay.scan.template_rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

T_LIT, T_FIELD, T_TYPED, T_LIST, T_OPT = range(5)
K_ANY, K_INT = 0, 1

_RMJOB = ("{type_code,job_id:typed} {job_name} {user} {class} {shares:int} {order:int} {qshares:int} "
          "{threads:int} {memory_gb:int} {nquest:int} {remaining:int} {init_wait} {max_processes:int}")

TEMPLATES: dict[str, str] = {
    "rmc_start": "{descr} RmCounter Start",
    "rmc_end": "{descr} RmCounter End",
    "rmc_maxorder": "{descr} maxorder = {maxorder:int}",
    "rmc_names": "{descr} entity_names = {names_list:words*}",
    "rmc_weights": "{descr} weights = {values_list:ints*}",
    "rmc_wanted": "{descr} wantedby.{entity} = {values_list:ints*}",
    "rmc_vmachines": "{descr} vmachines = {values_list:ints*}",
    "rmc_final": "{descr} Final apportionment:",
    "rmc_given": "{descr} {entity} gbo {values_list:ints*}",
    "rmc_vshares": "{descr} vshares {values_list:ints*}",
    "rmc_nshares": "{descr} nshares {values_list:ints*}",
    "frag_header": "Nodepool User PureFS NSh Counted Needed O Class: {class}",
    "frag_row": ("{nodepool} {user} {pure_fs:int} {nsh:int} {counted:int} {needed:int} {order:int} "
                 "[POTENTIALLY NEEDY]{potentially_needy}"),
    "evict_header": "Counted Current Needed Order ({nodepool})",
    "evict_row": "{counted:int} {current:int} {needed:int} {order:int}",
    "node_heartbeat": "{rule_count:int} {host} {short_name} {ip}",
    "prj_cannot_predict": "{user} Cannot predict cap: init_wait {init_wait} || time_per_item {time_per_item}",
    "prj_cap": ("{user} O {order:int} T {prj_t:int} NTh {prj_nth:int} TI {prj_ti:int} TR {prj_tr} R {prj_r} "
                "QR {prj_qr:int} P {prj_p:int} F {prj_f:int} ST {prj_st:int} return {prj_return:int}"),
    "init_job_cap": ("{user} O {order:int} Base cap: {base_cap:int} Expected future cap: {expected_cap:int} "
                     "potential cap {potential_cap:int} actual cap {actual_cap:int}"),
    "what_of_fair_share": "Scheduling job in class {class} : {shares_given:int} shares given, order {order:int}",
    "how_much_fair_share": "Scheduling job in class {_} : " + _RMJOB,
    "submit_row": "submit " + _RMJOB,
    "job_update": ("tot: {total:int} {state_from} -> {state_to} compl: {completed} err: {errors} "
                   "rem: {remaining:int} mean: {mean} skew: {skew}"),
    "rich_not_candidate": "Not a candidate, insufficient free space + candidate shares: {host}",
}

_FIELD = re.compile(r"^(?P<pre>[^{}]*)\{(?P<names>[\w,]+)(?::(?P<kind>int|typed|ints\*|words\*))?\}(?P<suf>[^{}]*)$")
_OPTIONAL = re.compile(r" \[(?P<words>[^\]]+)\]\{(?P<name>\w+)\}$")


@dataclass(frozen=True)
class Template:
    """A compiled template: the ops for `_scan.match`, the field names, the list field if any."""

    ops: tuple[tuple[int, bytes, bytes, int, int], ...]
    fields: tuple[str, ...]  # by field slot; "_" slots are matched, not kept
    list_field: str | None
    list_ints: bool = False  # the list holds integers (read to int64 by the scanner)


@lru_cache(maxsize=None)
def compile_template(text: str) -> Template:
    """Turn a template's text into the op tuple the scanner runs."""
    ops: list[tuple[int, bytes, bytes, int, int]] = []
    fields: list[str] = []
    list_field, list_ints = None, False
    optional = _OPTIONAL.search(text)
    body = text[: optional.start()] if optional else text
    for token in body.split(" "):
        m = _FIELD.match(token)
        if m is None:
            ops.append((T_LIT, token.encode(), b"", 0, K_ANY))
            continue
        names, kind = m["names"].split(","), m["kind"]
        if kind in ("ints*", "words*"):
            list_field, list_ints = names[0], kind == "ints*"
            ops.append((T_LIST, b"", b"", 0, K_INT if kind == "ints*" else K_ANY))
        elif kind == "typed":
            ops.append((T_TYPED, b"", b"", len(fields), K_ANY))
            fields.extend(names)
        else:
            ops.append((T_FIELD, m["pre"].encode(), m["suf"].encode(), len(fields), K_INT if kind == "int" else K_ANY))
            fields.append(names[0])
    if optional:
        ops.append((T_OPT, optional["words"].encode(), b"", len(fields), K_ANY))
        fields.append(optional["name"])
    return Template(tuple(ops), tuple(fields), list_field, list_ints)
