"""Training jobs: spec, run folder, detached supervisor, training entry point, monitor readers.

Everything the panel knows about a job lives in its run folder (see docs/architecture.md), so the panel can
quit and re-attach at any time; nothing here imports torch except `train` and `callbacks`, which
run in the job's own processes.
"""
