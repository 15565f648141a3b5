"""The evidence bundle: its layout, the writer, typed readers for every record kind, and export."""
