"""Whether the compiled scanner (`replay.parsing._scan`, built by `pip install`) is there."""

from __future__ import annotations

try:
    from replay.parsing import _scan  # noqa: F401 (imported for the check)
    COMPILED = True
except ImportError:  # pragma: no cover - built by `pip install`; without a compiler, polars does it all
    COMPILED = False
