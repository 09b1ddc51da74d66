"""The anonymization key: 32 random bytes in a file the site keeps, so its logs map the same way."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from replay.parsing.sources import InputError

_KEY_LINE = re.compile(r"rmreplay-anonymize-key-1 ([0-9a-f]{64})")


def load_or_create_key(path: str | Path | None) -> tuple[bytes, str]:
    """(the key, what happened): read from `path`, or created there (readable by its owner only)
    when the file does not exist; without a path, a new key for this run only."""
    if path is None:
        return secrets.token_bytes(32), "a new key for this run (pass --key FILE to keep the pseudonyms across logs)"
    path = Path(path)
    if path.exists():
        try:
            m = _KEY_LINE.fullmatch(path.read_text(encoding="ascii").strip())
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{path}: cannot read the key ({exc}); give the key file rmreplay wrote") from exc
        if m is None:
            raise InputError(f"{path}: not an rmreplay anonymization key; give the file rmreplay wrote, or a "
                             "path that does not exist yet (a new key is saved there)")
        return bytes.fromhex(m.group(1)), f"key read from {path}"
    key = secrets.token_bytes(32)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as fh:
        fh.write(f"rmreplay-anonymize-key-1 {key.hex()}\n")
    return key, f"new key saved to {path} (keep it: the same key maps the site's next logs the same way)"
