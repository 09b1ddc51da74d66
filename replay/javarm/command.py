"""`rmreplay rm build SRC`: the command line of the Java RM builds (the parser adds itself here)."""

from __future__ import annotations

import argparse

from rich.console import Console

from replay.javarm.build import build
from rmref.releases import RELEASES


def cmd_rm_build(args: argparse.Namespace, console: Console) -> int:
    """Build each SRC (or find its build in the cache) and say where it is."""
    for spec in args.sources:
        done = build(spec)
        how = f"built in {done.seconds:.1f} s" if done.built else "already built (cache)"
        console.print(f"{done.source}: DUCC {done.version} (release {done.release.name}), tree "
                      f"{done.digest[:12]}: {how}: {done.dir}", markup=False, highlight=False)
        if done.note:
            console.print(f"  {done.note}", markup=False, highlight=False)
    return 0


def add_rm_parser(sub: argparse._SubParsersAction) -> None:
    """`rmreplay rm build SRC...`."""
    rm = sub.add_parser("rm", help="the real Java RM of a DUCC source tree, for `simulate --rm java:SRC`")
    rm_sub = rm.add_subparsers(dest="rm_command", required=True)
    b = rm_sub.add_parser("build", help="build a DUCC source tree's RM (with rmreplay's harness) into the cache")
    b.add_argument("sources", nargs="+", metavar="SRC",
                   help="a DUCC source tree (a release's, or a working copy with a patch), or a release name ("
                        + ", ".join(r.name for r in RELEASES) + ") taken from the upstream git mirror "
                        "($RMREPLAY_DUCC_MIRROR)")
    b.set_defaults(func=cmd_rm_build)


def add_java_options(p: argparse.ArgumentParser) -> None:
    """`--rm java:SRC` and `--vs java:SRC2` of `simulate` and `check --simulate`."""
    p.add_argument("--rm", metavar="java:SRC", help="run the workload through the real Java RM of SRC (a DUCC "
                   "source tree or a release name; built into the cache as `rmreplay rm build` does) beside rmref")
    p.add_argument("--vs", metavar="java:SRC2", help="with --rm: compare a second build against the first, job by "
                   "job on the same workload (the report's baseline is --rm, its sim --vs)")
    p.add_argument("--java-seed", type=int, default=1, metavar="N",
                   help="seed of the Java RM's DuccId UUIDs (their hash order breaks the RM's ties; an INFO log "
                        "does not show them; default 1)")


def java_lines(report: dict) -> list[str]:
    """What `simulate --rm` adds to the console: the sides, the Java run's identity, where builds part, assumptions."""
    rm = report.get("rm")
    if not rm:
        return []
    ident, sides = rm["identity_sim"], rm["sides"]
    pct = "-" if ident["shares_match"] is None else f"{100 * ident['shares_match']:.1f}%"
    median, p90 = ident["finish_error_median_pct"], ident["finish_error_p90_pct"]
    out = [f"sides: logged = {sides['logged']}, baseline = {sides['baseline']}, sim = {sides['sim']}",
           f"identity (sim vs log): shares {pct} of {ident['job_cycles']:,} job-cycles, completion error median "
           f"{'-' if median is None else f'{median:.2f}%'} p90 {'-' if p90 is None else f'{p90:.2f}%'} over "
           f"{ident['jobs']} job(s)"]
    vs = rm.get("vs")
    if vs:
        first = vs["first_difference"]
        where = f"; first at cycle {first['cycle']}, job {first['job_id']}" if first else ""
        out.append(f"--vs: {vs['job_cycles_differ']:,} job-cycle(s) hold different processes, "
                   f"{vs['schedules_differ']:,} schedule(s) differ{where}")
    mismatched = [r["build"] for r in rm["runs"] if rm.get("log_release") and r["release"] != rm["log_release"]]
    if mismatched:
        out.append(f"note: the log is DUCC {rm['log_release']}, {', '.join(mismatched)} another release: "
                   "identity with the log is not expected")
    out += [f"assumed (Java run): {line}" for line in rm["runs"][0]["assumed"]]
    out.append(f"configuration: {rm['runs'][0]['configuration']}")
    return out
