"""The Log tab: the raw lines of one cycle, coloured by message family, drawn line by line."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.style import Style
from rich.text import Text
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

if TYPE_CHECKING:
    from tui.data import Browse


class LogView(ScrollView, can_focus=True):
    """The raw lines of one cycle, rendered line by line (only the visible lines are drawn)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.lines: list[tuple[str, str]] = []  # (text, style)
        self._strips: dict[int, Strip] = {}  # line -> its rendering, until the lines change
        self._base: Style | None = None

    def set_lines(self, lines: list[tuple[str, str]]) -> None:
        """Show these lines from the top."""
        self.lines = lines
        self._strips.clear()
        width = max((len(t) for t, _ in lines), default=0)
        size = Size(width, len(lines))
        if size != self.virtual_size:
            # the virtual size is a layout reactive; the view's own size does not change, so skip the re-layout
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def fill(self, browse: Browse, cycle: int, query: str = "") -> None:
        """Show the cycle's lines containing every plain word of `query` (field:value words are the tables')."""
        from tui.data import line_style

        lines, total = browse.log_at(cycle)
        shown: list[tuple[str, str]] = []
        if browse.lines is None:
            shown.append(("raw lines are not available: the input was a parse output directory", "italic"))
        words = [w.lower() for w in query.split() if ":" not in w]
        shown += [(line, line_style(line)) for line in lines if not words or all(w in line.lower() for w in words)]
        if total > len(lines):
            shown.append((f"… {total - len(lines):,} more lines in this cycle", "italic"))
        self.set_lines(shown)

    def text(self) -> str:
        """Every line, as plain text."""
        return "\n".join(t for t, _ in self.lines)

    def render_lines(self, crop: Region) -> list[Strip]:
        """Look the widget's style up once for all the lines of this paint."""
        self._base = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._base = None

    def render_line(self, y: int) -> Strip:
        """One visible line, cropped to the view."""
        scroll_x, scroll_y = self.scroll_offset
        base = self._base or self.rich_style
        i = scroll_y + y
        if i >= len(self.lines):
            return Strip.blank(self.size.width, base)
        strip = self._strips.get(i)
        if strip is None:
            text, style = self.lines[i]
            strip = self._strips[i] = Strip(list(Text(text, style=style, no_wrap=True).render(self.app.console)))
        strip = strip.crop(scroll_x, scroll_x + self.size.width)
        return strip.extend_cell_length(self.size.width).apply_style(base)
