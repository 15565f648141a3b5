"""One importer per kind of client input; each returns an `Imported` (see reproduce/model.py)."""
