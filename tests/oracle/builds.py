"""One oracle build per DUCC release: extract the release's tree from the upstream mirror, build.sh it.

    python -m tests.oracle.builds [RELEASE ...|all]     # build (if needed) and print where

A release's build lives in /tmp/oracle/build-RELEASE, its source tree in /tmp/oracle/src-RELEASE
(from `git archive` of the release's tag in the mirror, ORACLE_MIRROR or /work/.mirror/apache+uima-ducc/repo).
The harness (build.sh, java/, run.py) lives in replay/javarm. A build is redone when the harness changed
since: build-RELEASE/harness.sha records the hash of the harness it was built with.
The releases are rmref.releases.RELEASES.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from replay.javarm.harness import harness_hash, run_build_sh
from rmref.releases import LATEST, RELEASES, Release, release

ROOT = Path("/tmp/oracle")
MIRROR = Path(os.environ.get("ORACLE_MIRROR", "/work/.mirror/apache+uima-ducc/repo"))


def build_dir(name: str) -> Path:
    """Where the release's oracle is built."""
    return ROOT / f"build-{release(name).name}"


def _ref(rel: Release) -> str:
    """The git object the release is built from: the tag (refs/tags/, since some tags share a branch's
    name) or a commit."""
    return f"refs/tags/{rel.tag}" if rel.tag.startswith("uima-ducc-") else rel.tag


def extract(rel: Release) -> Path:
    """The release's upstream tree under /tmp/oracle/src-RELEASE (extracted once)."""
    src = ROOT / f"src-{rel.name}"
    if (src / "pom.xml").exists():
        return src
    if not MIRROR.exists():
        raise SystemExit(f"no upstream mirror at {MIRROR} (set ORACLE_MIRROR to the git dir of apache/uima-ducc)")
    tmp = ROOT / f".src-{rel.name}.{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    archive = subprocess.Popen(["git", f"--git-dir={MIRROR}", "archive", _ref(rel)], stdout=subprocess.PIPE)
    subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout, check=True)
    if archive.wait() != 0:
        raise SystemExit(f"git archive {_ref(rel)} failed in {MIRROR}")
    tmp.rename(src)
    return src


def ensure_build(name: str = LATEST.name, quiet: bool = False) -> Path:
    """The release's oracle build directory, built first if missing or made with another harness."""
    rel = release(name)
    out = build_dir(rel.name)
    want = harness_hash()
    stamp = out / "harness.sha"
    if (out / "classpath").exists() and stamp.exists() and stamp.read_text().strip() == want:
        return out
    src = extract(rel)
    start = time.monotonic()
    p = run_build_sh(src, out)
    if p.returncode != 0:
        tail = "\n".join(p.stdout.strip().splitlines()[-20:])
        raise SystemExit(f"build of the {rel.name} oracle failed:\n{tail}")
    stamp.write_text(want + "\n")
    (out / "release").write_text(f"{rel.name} {rel.tag}\n")
    if not quiet:
        sys.stderr.write(f"built the {rel.name} oracle ({rel.tag}) into {out} in {time.monotonic() - start:.1f} s\n")
    return out


def main(argv: list[str] | None = None) -> int:
    """CLI: build the named releases (default: all)."""
    names = (argv if argv is not None else sys.argv[1:]) or ["all"]
    if names == ["all"]:
        names = [r.name for r in RELEASES]
    for name in names:
        try:
            print(f"{release(name).name}\t{ensure_build(name)}")
        except KeyError as exc:
            print(exc.args[0], file=sys.stderr)
            return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
