"""The tabs beside the timeline: each tab's widget fills itself with the cycle on screen, when shown."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual.widget import Widget
from textual.widgets import TabbedContent, TabPane

from tui.actions import TABS
from tui.widgets.log_view import LogView
from tui.widgets.tables import DefragTable, DiffTable, JobsTable, NodesTable

if TYPE_CHECKING:
    from tui.data import Browse

WIDGETS: dict[str, tuple[type[Widget], str]] = {
    "jobs": (JobsTable, "jobs-table"), "nodes": (NodesTable, "nodes-table"), "defrag": (DefragTable, "defrag-table"),
    "log": (LogView, "log-view"), "diff": (DiffTable, "diff-table")}


class CycleTabs(TabbedContent):
    """Jobs, Nodes, Defrag, Log and Diff of one cycle. Showing a cycle fills the tab on screen only;
    another tab fills itself when it is opened (a cycle switch costs one tab, not five)."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(initial="jobs", **kw)
        self._shown: tuple[Browse, int, str] | None = None
        self._stale: set[str] = set()
        for tab in TABS:
            kind, widget_id = WIDGETS[tab]
            self.compose_add_child(TabPane(tab.title(), kind(id=widget_id), id=tab))

    def widget(self, tab: str | None = None) -> Widget:
        """The widget of a tab (default: the one on screen)."""
        return self.query_one(f"#{WIDGETS[tab or self.active or 'jobs'][1]}")

    def show(self, browse: Browse, cycle: int, query: str) -> None:
        """Show a cycle (rows matching `query`)."""
        self._shown = (browse, cycle, query)
        self._stale = set(TABS)
        self._fill(self.active or "jobs")

    def _fill(self, tab: str) -> None:
        if tab in self._stale and self._shown is not None:
            self._stale.discard(tab)
            self.widget(tab).fill(*self._shown)  # type: ignore[attr-defined]

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """A tab opened: fill it if the cycle changed since it was last shown."""
        self._fill(event.pane.id or "")
