"""Run directories: versioned JSON documents and append-only raw records (docs/formats.md)."""
