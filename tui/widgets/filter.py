"""The `/` filter box: words every row shown must match (tui.data.matches), hidden when not in use."""

from __future__ import annotations

from typing import Any

from textual.widgets import Input


class FilterBox(Input):
    """Words match job, user, class or host; `field:text` matches one of them."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(placeholder="filter: words match job, user, class or host (user:alice host:n1)", **kw)

    def on_mount(self) -> None:
        """Hidden until `/`."""
        self.display = False

    def on_input_submitted(self) -> None:
        """Enter: back to the tab's rows (the filter stays)."""
        self.screen.query_one("#tabs").widget().focus()  # type: ignore[attr-defined]

    def open(self) -> None:
        """Show the box and type into it."""
        self.display = True
        self.focus()

    def close(self) -> bool:
        """Clear and hide the box; whether it was in use."""
        if not (self.display or self.value):
            return False
        self.value, self.display = "", False
        return True
