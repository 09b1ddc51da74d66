"""The compiled front end (replay.parsing._scan); everything else is declared in pyproject.toml.

`optional=True`: without a C compiler the install still succeeds and rmreplay parses with its
pure-polars path (slower, same tables).
"""

from setuptools import Extension, setup

MODULES = ("module", "lines", "chunk", "templates", "fill", "route", "rmcounter", "schedule", "occupancy", "sections",
           "groups", "arrow", "keys", "caps", "defrag", "shares", "numbers",
           "expansions", "pools", "texts", "boot", "where", "names", "reader")
SOURCES = [f"replay/parsing/csrc/{name}.c" for name in MODULES]
HEADERS = ["replay/parsing/csrc/scan.h", "replay/parsing/csrc/arrow.h"]

setup(ext_modules=[Extension("replay.parsing._scan", SOURCES, depends=HEADERS, extra_compile_args=["-O2"],
                             optional=True)])
