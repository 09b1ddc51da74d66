#!/usr/bin/env python3
"""Run the DUCC RM oracle on a scenario.

usage: run.py scenario.json OUT_DIR [--build /tmp/oracle/build-trunk] [--no-debug] [--keep]
Writes OUT_DIR/{rm.log, rm-debug.log, truth.jsonl, resources/}.  Build first with build.sh.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

LOG4J = """<?xml version="1.0" encoding="UTF-8" ?>
<!DOCTYPE log4j:configuration SYSTEM "log4j.dtd">
<log4j:configuration xmlns:log4j="http://jakarta.apache.org/log4j/">
  <appender name="ducc-log" class="org.apache.uima.ducc.oracle.SimAppender">
    <param name="File" value="{log}"/>
    <layout class="org.apache.log4j.PatternLayout">
      <param name="ConversionPattern"
             value="%d{{DATE}} %5p %X{{COMPONENT}}.%c{{1}} - %X{{JID}} T[%X{{TID}}] %X{{METHOD}} %m%n"/>
    </layout>
  </appender>
  <category name="org.apache.uima.ducc.rm" additivity="false">
    <priority value="{level}"/>
    <appender-ref ref="ducc-log" />
  </category>
  <root><priority value="off"/></root>
</log4j:configuration>
"""

def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("out")
    ap.add_argument("--build", default="/tmp/oracle/build-trunk")
    ap.add_argument("--no-debug", action="store_true", help="skip the DEBUG run (rm-debug.log)")
    ap.add_argument("--keep", action="store_true", help="keep the temporary DUCC_HOME")
    a = ap.parse_args()
    a.scenario = os.path.abspath(a.scenario)
    a.out = os.path.abspath(a.out)
    scen = json.load(open(a.scenario))
    cp = open(os.path.join(a.build, "classpath")).read().strip()
    os.makedirs(a.out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="oracle-")
    home = os.path.join(work, "ducc_runtime")
    res = os.path.join(home, "resources")
    os.makedirs(res)
    props = open(os.path.join(a.build, "default.ducc.properties")).read()
    props += "\n\n# ---- oracle harness settings\n"
    props += "ducc.rm.scheduler = org.apache.uima.ducc.rm.scheduler.OracleNodepoolScheduler\n"
    props += "ducc.head = localhost\n"
    props += "# ---- scenario overrides\n"
    for k, v in (scen.get("properties") or {}).items():
        props += "%s = %s\n" % (k, v)
    open(os.path.join(res, "ducc.properties"), "w").write(props)
    classes = scen.get("classes") or open(os.path.join(a.build, "default.ducc.classes")).read()
    open(os.path.join(res, "ducc.classes"), "w").write(classes)
    for name, text in (scen.get("files") or {}).items():
        open(os.path.join(res, name), "w").write(text)
    # 3.0.0's DuccHead runs DUCC_HOME/admin/ducc_head_mode.py at every Orchestrator publication: stand in for
    # it with what that script prints on a single-head installation (no ducc.head.reliable.list)
    os.makedirs(os.path.join(home, "admin"))
    head_mode = os.path.join(home, "admin", "ducc_head_mode.py")
    open(head_mode, "w").write("#!/bin/sh\necho unspecified\n")
    os.chmod(head_mode, 0o755)
    java = shutil.which("java")
    if java is None:
        sys.exit("run.py: no `java` on PATH: install a JDK (openjdk-17-jdk-headless)")
    java_home = os.path.dirname(os.path.dirname(os.path.realpath(java)))

    def sanitize(text: str) -> str:
        return (text.replace(home, "/home/ducc/ducc_runtime").replace(java_home, "/opt/java/jre")
                    .replace("OracleNodepoolScheduler", "NodepoolScheduler"))

    runs = [("info", "rm.log", "truth.jsonl")]
    if not a.no_debug and scen.get("debug_log", True) is not False:      # scenario "debug_log": false skips it too
        runs.append(("debug", "rm-debug.log", "-"))
    for level, logname, truth in runs:
        log = os.path.join(work, logname)
        open(os.path.join(res, "log4j.xml"), "w").write(LOG4J.format(log=log, level=level))
        tpath = os.path.join(a.out, truth) if truth != "-" else "-"
        cmd = ["java", "-Duser.timezone=UTC", "-Duser.language=en", "-Duser.country=US",
               "-DDUCC_HOME=" + home, "-Dducc.deploy.configuration=" + os.path.join(res, "ducc.properties"),
               "-Dducc.deploy.components=rm", "-cp", cp, "org.apache.uima.ducc.oracle.Oracle",
               a.scenario, home, log, tpath]
        p = subprocess.run(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if p.returncode != 0:
            sys.stderr.write(p.stdout[-5000:])
            sys.exit(p.returncode)
        with open(os.path.join(a.out, logname), "w") as f:
            f.write(sanitize(open(log).read()))
    od = os.path.join(a.out, "resources")
    os.makedirs(od, exist_ok=True)
    for fn in os.listdir(res):
        if fn == "log4j.xml":
            continue
        with open(os.path.join(od, fn), "w") as f:
            f.write(sanitize(open(os.path.join(res, fn)).read()))
    if not a.keep:
        shutil.rmtree(work)
    else:
        print("kept", work)

if __name__ == "__main__":
    main()
