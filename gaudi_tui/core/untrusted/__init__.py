"""What comes from outside the panel's own process, read one way: untrusted JSON and numbers
(`data`; Prometheus's instant vectors read from their bytes by its rules: `vector`), and the file
helpers every reader of a run folder or a shared file shares (`files`).

This floor sits below every domain package (jobs, chat, serve, alerts, fleet, slurm, devices): it
imports nothing of theirs, nor Textual.
"""
