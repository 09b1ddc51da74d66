"""rmreplay's version: the one place it is stated (pyproject.toml reads it at build time, so a command
never asks importlib.metadata, which costs 20-40 ms of every command's start-up)."""

__version__ = "0.1.0"
