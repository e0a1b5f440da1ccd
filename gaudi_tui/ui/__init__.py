"""The Textual UI. Only this package imports Textual."""
