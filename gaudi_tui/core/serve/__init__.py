"""Serving models: the server's own figures (figures.py)."""
