"""Alerts: what fires (`jobs.py` for a job's supervisor, `cards.py` for the card watcher), where it
is kept (`store.py`: the notifications file and the once-only ledger) and where it goes (`sinks.py`:
the terminal's bell and desktop-notification escapes, a webhook, a command; `deliver.py` runs the
webhook and the command in a short-lived child, so nothing here ever blocks a job). No Textual."""
