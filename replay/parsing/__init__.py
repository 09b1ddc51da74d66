"""The parsing layer: rm.log bytes in, the typed tables out (sources, chunks, scanner, grammar, tables, Parquet)."""
