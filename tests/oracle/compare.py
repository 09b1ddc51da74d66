#!/usr/bin/env python3
"""Compare a regenerated oracle run with a fixture.  usage: compare.py NEW_DIR FIXTURE_DIR [rm.log|rm-debug.log|truth]
("truth" compares truth.jsonl only: for i_mega24, whose 137 MB log is too big for the line diff)

Reports: identical lines (positional, difflib), per-timestamp multiset equality (ignores the order of log
records within one simulated time step, which hash-map iteration order decides), and truth.jsonl equality
per cycle (whole record, and with the order of jobs/shares ignored), and the defrag section plus the per-job
needy/needy_count/in_needy_list/published fields on the cycles whose jobs are otherwise equal.
"""
import collections
import difflib
import gzip
import json
import re
import sys

HDR = re.compile(r"^\d\d \w\w\w \d{4} \d\d:\d\d:\d\d,\d\d\d ")

def opn(p):
    try:
        return open(p)
    except FileNotFoundError:
        return gzip.open(p + ".gz", "rt")

def records(path):
    recs, cur = [], None
    for line in opn(path):
        if HDR.match(line):
            if cur is not None:
                recs.append(cur)
            cur = line
        else:
            cur = (cur or "") + line
    if cur is not None:
        recs.append(cur)
    return recs

def main():
    new, fix = sys.argv[1], sys.argv[2]
    name = sys.argv[3] if len(sys.argv) > 3 else "rm.log"
    if name == "truth":
        return truth(new, fix)
    a, b = opn(f"{new}/{name}").read().splitlines(), opn(f"{fix}/{name}").read().splitlines()
    sm = difflib.SequenceMatcher(None, a, b, autojunk=False)
    same = sum(bl.size for bl in sm.get_matching_blocks())
    in_place = sum(x == y for x, y in zip(a, b))
    print(f"{name}: new {len(a)} lines, fixture {len(b)} lines, identical-in-place {in_place}, "
          f"in LCS {same} ({100.0 * same / max(len(b), 1):.1f}%)")
    ra, rb = records(f"{new}/{name}"), records(f"{fix}/{name}")
    ga, gb = collections.defaultdict(collections.Counter), collections.defaultdict(collections.Counter)
    for r in ra:
        ga[r[:24]][r] += 1
    for r in rb:
        gb[r[:24]][r] += 1
    steps = sorted(set(ga) | set(gb))
    eq = [s for s in steps if ga[s] == gb[s]]
    print(f"  time steps with identical record multisets: {len(eq)}/{len(steps)}")
    bad = [s for s in steps if ga[s] != gb[s]]
    if bad:
        s = bad[0]
        only_new, only_fix = ga[s] - gb[s], gb[s] - ga[s]
        print(f"  first differing step {s}: only-new {sum(only_new.values())}, only-fixture {sum(only_fix.values())}")
        for r in list(only_new.elements())[:4]:
            print("   new>", r.rstrip()[:220])
        for r in list(only_fix.elements())[:4]:
            print("   fix>", r.rstrip()[:220])
    if name != "rm.log":
        return
    truth(new, fix)

def truth(new, fix):
    try:
        ta = [json.loads(line) for line in opn(f"{new}/truth.jsonl")]
        tb = [json.loads(line) for line in opn(f"{fix}/truth.jsonl")]
    except FileNotFoundError:
        return
    def norm(rec, keys):
        r = {k: v for k, v in rec.items() if k in keys}
        return json.dumps(r, sort_keys=True)
    n = min(len(ta), len(tb))
    top = ["cycle", "epoch", "t", "time"]
    jk = ["id", "type", "ap", "user", "class", "policy", "nodepool", "memory", "order", "max_shares", "given_by_order",
          "nshares_given", "qshares_given", "pure_fair_share", "job_cap", "nquestions", "remaining", "initialized",
          "completed", "refused", "deferred", "reason", "sched_state", "shares", "added", "preempted"]
    nk = ["name", "nodepool", "memory_kb", "order", "free_qshares", "virtual_free", "nshares", "status", "online",
          "blacklisted"]
    ok_top = sum(norm(x, top) == norm(y, top) for x, y in zip(ta, tb))
    def jobs(r): return sorted(norm(j, jk) for j in r["jobs"])
    def nodes(r): return sorted(norm(j, nk) for j in r["nodes"])
    def cnt(r): return sorted((j["id"], len(j["shares"]), j["nshares_given"], j["job_cap"]) for j in r["jobs"])
    ok_j = sum(jobs(x) == jobs(y) for x, y in zip(ta, tb))
    ok_n = sum(nodes(x) == nodes(y) for x, y in zip(ta, tb))
    ok_c = sum(cnt(x) == cnt(y) for x, y in zip(ta, tb))
    print(f"truth.jsonl: new {len(ta)} cycles, fixture {len(tb)}; cycle/epoch/t equal {ok_top}/{n}; "
          f"jobs equal (exact share ids/hosts) {ok_j}/{n}; per-job (id, nshares, given, cap) equal {ok_c}/{n}; "
          f"nodes equal {ok_n}/{n}")
    for x, y in zip(ta, tb):
        if cnt(x) != cnt(y):
            print("  first per-job count difference at cycle", x["cycle"], "new", cnt(x), "fixture", cnt(y))
            break
    # defrag section and per-job needy fields, judged on the cycles whose jobs are otherwise equal
    nkeys = ["id", "needy", "needy_count", "in_needy_list", "published"]
    def needyf(r): return sorted(norm(j, nkeys) for j in r["jobs"])
    def dfr(r): return json.dumps(r.get("defrag"), sort_keys=True)
    def dfr_unordered(r):
        d = r.get("defrag") or {}
        rich = sorted(json.dumps(x, sort_keys=True) for x in d.get("take_from_the_rich", []))
        actions = sorted(json.dumps(x, sort_keys=True) for x in d.get("actions", []))
        return json.dumps([d.get("needy"), rich, actions], sort_keys=True)
    def has_dfr(r):
        d = r.get("defrag") or {}
        return bool(d.get("needy") or d.get("take_from_the_rich") or d.get("actions"))
    same = [(x, y) for x, y in zip(ta, tb) if jobs(x) == jobs(y)]
    ok_d = sum(dfr(x) == dfr(y) and needyf(x) == needyf(y) for x, y in same)
    ok_du = sum(dfr_unordered(x) == dfr_unordered(y) and needyf(x) == needyf(y) for x, y in same)
    nd = sum(has_dfr(y) for x, y in same)
    ok_dd = sum(has_dfr(y) and dfr(x) == dfr(y) for x, y in same)
    print(f"defrag/needy: on the {len(same)} jobs-equal cycles, defrag section + needy fields equal {ok_d}/{len(same)} "
          f"(actions order ignored: {ok_du}); fixture cycles with defrag activity among them {nd}, equal {ok_dd}; "
          f"all cycles: defrag equal {sum(dfr(x) == dfr(y) for x, y in zip(ta, tb))}/{n}, "
          f"needy fields equal {sum(needyf(x) == needyf(y) for x, y in zip(ta, tb))}/{n}")
    for x, y in same:
        if dfr(x) != dfr(y) or needyf(x) != needyf(y):
            print("  first defrag/needy difference on a jobs-equal cycle:", x["cycle"],
                  "new", dfr(x)[:300], "fixture", dfr(y)[:300])
            break

main()
