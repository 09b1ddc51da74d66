"""The TUI's widgets and screens: each fills itself from the data (tui.data.Browse) it is given."""
