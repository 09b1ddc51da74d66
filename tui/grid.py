"""A light table widget that draws only the lines on screen (Textual's line API).

Textual's DataTable re-renders and re-measures its cells when rows change, which costs about
100 ms per cycle on a busy log; the tables here have fixed column widths, so a row is one
pre-laid line: replacing the rows costs nothing until a line is drawn, and a repaint draws the
header plus the visible rows (each cached as a Strip until the rows change).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.events import Click
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget

Cell = str | Text
PAD = 1  # blank cells either side of a column, as DataTable draws them


class Grid(ScrollView, can_focus=True):
    """Rows of fixed-width columns under a fixed header, with a row cursor; only visible lines are drawn."""

    DEFAULT_CSS = """
    Grid {
        background: $surface;
        color: $foreground;
        height: 1fr;
    }
    Grid > .grid--header {
        text-style: bold;
        background: $panel;
        color: $foreground;
    }
    Grid > .grid--cursor {
        background: $block-cursor-blurred-background;
        color: $block-cursor-blurred-foreground;
    }
    Grid:focus {
        background-tint: $foreground 5%;
    }
    Grid:focus > .grid--header {
        background-tint: $foreground 5%;
    }
    Grid:focus > .grid--cursor {
        background: $block-cursor-background;
        color: $block-cursor-foreground;
        text-style: $block-cursor-text-style;
    }
    """
    COMPONENT_CLASSES = {"grid--header", "grid--cursor"}
    BINDINGS = [
        Binding("up", "cursor(-1)", "Up", show=False),
        Binding("down", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "Top", show=False),
        Binding("end", "edge(1)", "Bottom", show=False),
        Binding("left", "scroll_left", "Left", show=False),
        Binding("right", "scroll_right", "Right", show=False),
        Binding("enter", "select_cursor", "Select", show=False),
    ]

    class _RowMessage(Message):
        """A message about one row of a grid."""

        def __init__(self, grid: Grid, row: int) -> None:
            super().__init__()
            self.grid, self.cursor_row = grid, row

        @property
        def control(self) -> Grid:
            """The grid the message is about."""
            return self.grid

    class Highlighted(_RowMessage):
        """The user moved the cursor to another row."""

    class Selected(_RowMessage):
        """Enter (or a click on the cursor's row) picked a row."""

    def __init__(self, columns: Sequence[tuple[str, int]], *, header: bool = True, **kw: Any) -> None:
        super().__init__(**kw)
        self.columns = list(columns)
        self.header = header
        self.rows: list[tuple[Cell, ...]] = []
        self.cursor_row = 0
        self._width = sum(w + 2 * PAD for _, w in self.columns)
        self._lines: dict[int, Strip] = {}  # row -> its full-width line, until the rows change
        self._head: Strip | None = None
        self._styles: tuple[Style, Style, Style] | None = None  # base, header, cursor: looked up once a paint

    # ------------------------------------------------------------------ the DataTable-like surface
    @property
    def row_count(self) -> int:
        """How many rows there are."""
        return len(self.rows)

    def get_row_at(self, row: int) -> tuple[Cell, ...]:
        """The cells of one row (as given)."""
        return self.rows[row]

    def drawn(self, row: int) -> list[str]:
        """The cells of one row as they are drawn: cut to their columns' widths, padding stripped."""
        text = "".join(seg.text for seg in self._row_strip(row))
        cells, x = [], 0
        for _, width in self.columns:
            cells.append(text[x + PAD:x + PAD + width].strip())
            x += width + 2 * PAD
        return cells

    def set_rows(self, rows: Sequence[tuple[Cell, ...]]) -> None:
        """Replace every row; the cursor stays where it is (on the last row if there are fewer now)."""
        self.rows = list(rows)
        self._lines.clear()
        self.cursor_row = min(self.cursor_row, max(len(self.rows) - 1, 0))
        size = Size(self._width, len(self.rows) + self.header)
        if size != self.virtual_size:
            # the virtual size is a layout reactive; a table's size does not move anything around it
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)
        self._keep_cursor_visible()
        self.refresh()

    def move_cursor(self, row: int, animate: bool = False) -> None:
        """Put the cursor on a row (no Highlighted message: only the user's moves send one)."""
        self._move(row, tell=False)

    # ------------------------------------------------------------------ cursor and keys
    def _move(self, row: int, tell: bool) -> None:
        row = min(max(row, 0), max(len(self.rows) - 1, 0))
        if row == self.cursor_row:
            return
        old, self.cursor_row = self.cursor_row, row
        self._refresh_row(old)
        self._refresh_row(row)
        self._keep_cursor_visible()
        if tell and self.rows:
            self.post_message(self.Highlighted(self, row))

    def _body_height(self) -> int:
        return max(self.scrollable_content_region.height - self.header, 1)

    def _keep_cursor_visible(self) -> None:
        top = round(self.scroll_y)
        height = self._body_height()
        if self.cursor_row < top:
            self.scroll_to(y=self.cursor_row, animate=False, immediate=True)
        elif self.cursor_row >= top + height:
            self.scroll_to(y=self.cursor_row - height + 1, animate=False, immediate=True)

    def _refresh_row(self, row: int) -> None:
        y = row - round(self.scroll_y) + self.header
        if 0 <= y < self.size.height:
            self.refresh_line(y)

    def action_cursor(self, delta: int) -> None:
        """Move the cursor up or down a row."""
        self._move(self.cursor_row + delta, tell=True)

    def action_page(self, direction: int) -> None:
        """Move the cursor a screen up or down."""
        self._move(self.cursor_row + direction * self._body_height(), tell=True)

    def action_edge(self, end: int) -> None:
        """Move the cursor to the first or the last row."""
        self._move(len(self.rows) - 1 if end else 0, tell=True)

    def action_select_cursor(self) -> None:
        """Pick the cursor's row."""
        if self.rows:
            self.post_message(self.Selected(self, self.cursor_row))

    def on_click(self, event: Click) -> None:
        """A click moves the cursor; a click on the cursor's row picks it."""
        row = event.y - self.header + round(self.scroll_y)
        if self.header and event.y < self.header or not 0 <= row < len(self.rows):
            return
        if row == self.cursor_row:
            self.post_message(self.Selected(self, row))
        else:
            self._move(row, tell=True)

    # ------------------------------------------------------------------ drawing
    def _line(self, cells: Sequence[Cell]) -> Strip:
        """One row laid out in the fixed columns (cells cut to their width), before any cursor style."""
        line = Text(no_wrap=True, end="")
        for (_, width), cell in zip(self.columns, cells):
            text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
            text.truncate(width, overflow="ellipsis", pad=True)
            line.append(" " * PAD)
            line.append_text(text)
            line.append(" " * PAD)
        return Strip(list(line.render(self.app.console)), self._width)

    def _row_strip(self, row: int) -> Strip:
        strip = self._lines.get(row)
        if strip is None:
            strip = self._lines[row] = self._line(self.rows[row])
        return strip

    def render_lines(self, crop: Region) -> list[Strip]:
        """Look the styles up once for all the lines of this paint (a CSS lookup costs more than a line)."""
        self._styles = (self.rich_style, self.get_component_rich_style("grid--header"),
                        self.get_component_rich_style("grid--cursor"))
        try:
            return super().render_lines(crop)
        finally:
            self._styles = None

    def render_line(self, y: int) -> Strip:
        """A visible line: the header, or the row scrolled to it (with the cursor's style on its row)."""
        scroll_x, scroll_y = self.scroll_offset
        width = self.size.width
        base, head, cursor = self._styles or (self.rich_style, self.get_component_rich_style("grid--header"),
                                              self.get_component_rich_style("grid--cursor"))
        style: Style | None
        if self.header and y == 0:
            if self._head is None:
                self._head = self._line([Text(label) for label, _ in self.columns])
            strip, style = self._head, head
        else:
            row = scroll_y + y - self.header
            if row >= len(self.rows):
                return Strip.blank(width, base)
            strip = self._row_strip(row)
            style = cursor if row == self.cursor_row else None
        strip = strip.crop(scroll_x, scroll_x + width).extend_cell_length(width)
        if style is not None:
            # the cursor's (or header's) colours under the cells' own: a red job stays red
            strip = Strip(Segment.apply_style(strip, style), strip.cell_length)
        return strip.apply_style(base)

    def on_resize(self) -> None:
        """Keep the cursor on screen when the view changes size."""
        self._keep_cursor_visible()
