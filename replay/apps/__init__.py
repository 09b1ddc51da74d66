"""The applications over parsed tables: audit, explain, what-if and the HTML report."""
