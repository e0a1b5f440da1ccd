"""Why a Gaudi job is slow: the runtime's metrics files (`runtime.py`), the memory GaudiTrainer
prints and the bridge's banner (`report.py`), and the findings drawn from them (`findings.py`).
Nothing here imports torch or the UI."""
