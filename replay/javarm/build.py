"""`rmreplay rm build SRC`: one DUCC source tree's RM, built with the harness into the cache.

A build lives in `$RMREPLAY_CACHE/javarm/<key>/` (build.sh's output: `classes/`, `classpath`,
the tree's default `ducc.properties` and `ducc.classes`) plus `build.json` (release, pom version,
tree digest, harness hash). The key hashes the content of every file build.sh reads from the tree
(the three modules' Java sources, the Version template, the pom, the default resources) and the
harness, so an edited tree or harness builds again and an unchanged one never does.

SRC may also be a release name (`trunk`, `2.2.2`, ...): its tree is extracted from an upstream git
mirror of apache/uima-ducc: `$RMREPLAY_DUCC_MIRROR`, else `uima-ducc.git` in the cache (one
`git clone --mirror` makes it; the error says so).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from replay.javarm.harness import harness_hash, missing_packages, run_build_sh
from replay.model.release_names import resolve
from replay.parsing.digest import cache_root
from replay.parsing.sources import InputError
from rmref.releases import RELEASES, Release

MODULES = ("uima-ducc-rm", "uima-ducc-common", "uima-ducc-transport")
RESOURCES = ("pom.xml", "src/main/resources/default.ducc.properties", "src/main/resources/ducc.classes",
             "uima-ducc-common/src/main/versionJava/org/apache/uima/ducc/common/utils/Version.java")
UPSTREAM = "https://github.com/apache/uima-ducc.git"


@dataclass(frozen=True)
class JavaBuild:
    """A built RM: where it is, which release its tree is, and where the tree came from."""

    dir: Path
    release: Release  # what the harness and the replay treat it as
    version: str  # the tree's pom version
    digest: str  # content digest of the files build.sh reads
    source: str  # the tree's path, or "RELEASE (mirror TAG)"
    built: bool  # built by this call (False: from the cache)
    seconds: float
    note: str | None = None  # the pom version is not a known release: which one it is treated as

    @property
    def label(self) -> str:
        """`java:<release> <digest>`, as reports name the build."""
        return f"java:{self.release.name} {self.digest[:12]}"


def _tree_files(src: Path) -> list[Path]:
    """The files of the tree build.sh reads, in a stable order."""
    files = [src / rel for rel in RESOURCES if (src / rel).is_file()]
    for module in MODULES:
        files += sorted((src / module / "src" / "main" / "java").rglob("*.java"))
    return files


def tree_digest(src: Path) -> str:
    """sha256 of the names and bytes of every file build.sh reads from the tree."""
    h = hashlib.sha256()
    for path in _tree_files(src):
        h.update(path.relative_to(src).as_posix().encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def pom_version(src: Path) -> str:
    """The tree's version: the first `<version>` of its top pom.xml (what build.sh stamps into Version)."""
    m = re.search(r"<version>\s*([^<\s]+)\s*</version>", (src / "pom.xml").read_text(errors="replace"))
    if not m:
        raise InputError(f"{src}/pom.xml has no <version>: not a DUCC source tree")
    return m.group(1)


def check_tree(src: Path) -> None:
    """InputError (one line) unless SRC looks like a DUCC source tree build.sh can build."""
    if not src.is_dir():
        raise InputError(f"{src}: no such directory (give a DUCC source tree, or a release: "
                         f"{', '.join(r.name for r in RELEASES)})")
    lacking = [p for p in ("pom.xml", "src/main/resources/default.ducc.properties", "src/main/resources/ducc.classes",
                           *(f"{m}/src/main/java" for m in MODULES)) if not (src / p).exists()]
    if lacking:
        raise InputError(f"{src}: not a DUCC source tree (no {', '.join(lacking)})")
    if not (src / "uima-ducc-rm/src/main/java/org/apache/uima/ducc/rm/scheduler/NodepoolScheduler.java").is_file():
        raise InputError(f"{src}: not a DUCC source tree (uima-ducc-rm has no scheduler/NodepoolScheduler.java)")


def check_jdk() -> None:
    """InputError naming the packages to install when the JDK or a jar the build needs is missing."""
    need = missing_packages()
    if need:
        raise InputError(f"building the Java RM needs a JDK and the jars it compiles against: apt-get install "
                         f"{' '.join(need)}")


def mirror() -> Path:
    """The upstream mirror's git dir; InputError when there is none."""
    given = os.environ.get("RMREPLAY_DUCC_MIRROR")
    path = Path(given) if given else cache_root() / "uima-ducc.git"
    if not (path / "HEAD").exists() and not (path / ".git").exists():
        raise InputError(f"no upstream git mirror of apache/uima-ducc at {path}: run `git clone --mirror {UPSTREAM} "
                         f"{path}`, or set RMREPLAY_DUCC_MIRROR to one, or give a source tree's path")
    return path


def release_tree(rel: Release) -> Path:
    """The release's tree from the mirror, extracted once into the cache (`javarm/src-RELEASE`)."""
    out = cache_root() / "javarm" / f"src-{rel.name}"
    if (out / "pom.xml").is_file():
        return out
    git = mirror()
    ref = f"refs/tags/{rel.tag}" if rel.tag.startswith("uima-ducc-") else rel.tag
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}")
    tmp.mkdir(parents=True)
    archive = subprocess.Popen(["git", f"--git-dir={git}", "archive", ref], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL)
    untar = subprocess.run(["tar", "-x", "-C", str(tmp)], stdin=archive.stdout, stderr=subprocess.DEVNULL)
    if archive.wait() != 0 or untar.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"git archive {ref} failed in {git}: the mirror lacks release {rel.name}")
    try:
        tmp.rename(out)
    except OSError:  # extracted meanwhile by another process: the same tree
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def source_of(spec: str) -> tuple[Path, str]:
    """(tree, how to name it) for SRC: an existing directory, else a release extracted from the mirror."""
    path = Path(spec)
    if path.exists() or "/" in spec:
        return path.resolve(), str(path.resolve())
    known = {r.name: r for r in RELEASES} | {r.banner: r for r in RELEASES}
    if spec not in known:
        raise InputError(f"{spec}: neither a directory nor a release ({', '.join(r.name for r in RELEASES)})")
    rel = known[spec]
    return release_tree(rel), f"{rel.name} (mirror {rel.tag})"


def build(spec: str) -> JavaBuild:
    """Build SRC (a tree or a release name) into the cache, or find it there."""
    src, source = source_of(spec)
    check_tree(src)
    version = pom_version(src)
    try:
        rel, note = resolve(version)
    except ValueError:
        raise InputError(f"{src}/pom.xml: version {version!r} is not a DUCC version") from None
    digest = tree_digest(src)
    key = hashlib.sha256(f"{digest}\0{harness_hash()}".encode()).hexdigest()[:20]
    out = cache_root() / "javarm" / key
    meta = out / "build.json"
    if meta.is_file() and (out / "classpath").is_file():
        return JavaBuild(out, rel, version, digest, source, False, json.loads(meta.read_text())["seconds"], note)
    check_jdk()
    tmp = out.with_name(f".{key}.{uuid.uuid4().hex[:8]}")
    start = time.monotonic()
    p = run_build_sh(src, tmp)
    seconds = round(time.monotonic() - start, 1)
    if p.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        errors = [ln for ln in p.stdout.splitlines() if ": error:" in ln] or p.stdout.strip().splitlines()[-1:]
        raise InputError(f"the build of {source} failed: {errors[0].strip() if errors else 'build.sh exit '}"
                         f"{'' if errors else p.returncode}")
    shutil.rmtree(tmp / "src", ignore_errors=True)  # the patched copy of the tree: not needed to run
    # the classpath names the temporary directory: point it at the final one
    (tmp / "classpath").write_text((tmp / "classpath").read_text().replace(str(tmp), str(out)))
    (tmp / "build.json").write_text(json.dumps({"release": rel.name, "version": version, "digest": digest,
                                                "harness": harness_hash(), "source": source, "seconds": seconds},
                                               indent=1) + "\n")
    shutil.rmtree(out, ignore_errors=True)
    try:
        tmp.rename(out)
    except OSError:  # built meanwhile by another process: the same classes
        shutil.rmtree(tmp, ignore_errors=True)
    return JavaBuild(out, rel, version, digest, source, True, seconds, note)
