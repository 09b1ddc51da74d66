"""The harness files (build.sh, the driver and stubs in java/, run.py) and what a build needs.

The harness's Java is rmreplay's own (a driver, a simulated Orchestrator and agents, stubs for
Camel, Spring and a few DUCC classes); the RM's sources are read from the user's tree at build time.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD_SH = HERE / "build.sh"
RUN_PY = HERE / "run.py"
JAVA = HERE / "java"
# the jars build.sh compiles against, and the Debian/Ubuntu package of each
JARS = (("/usr/share/java/log4j-1.2.jar", "liblog4j1.2-java"), ("/usr/share/java/guava.jar", "libguava-java"),
        ("/usr/share/java/commons-lang3.jar", "libcommons-lang3-java"))
JDK_PACKAGE = "openjdk-17-jdk-headless"


def harness_hash() -> str:
    """A hash of build.sh and every harness Java source: a build made with another harness is stale."""
    h = hashlib.sha256(BUILD_SH.read_bytes())
    for path in sorted(JAVA.rglob("*.java")):
        h.update(str(path.relative_to(HERE)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def missing_packages() -> list[str]:
    """The system packages a build needs and this machine lacks (javac, java and the three jars)."""
    need = [] if shutil.which("javac") and shutil.which("java") else [JDK_PACKAGE]
    return need + [pkg for jar, pkg in JARS if not Path(jar).is_file()]


def run_build_sh(src: Path, out: Path) -> subprocess.CompletedProcess[str]:
    """build.sh SRC OUT (stdout and stderr together)."""
    return subprocess.run(["bash", str(BUILD_SH), str(src), str(out)], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True)
