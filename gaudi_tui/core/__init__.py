"""Everything that is not UI. Nothing here imports Textual (tests/shell/test_import_hygiene.py enforces it)."""
