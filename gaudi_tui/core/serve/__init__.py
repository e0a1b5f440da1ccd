"""Serving a model: the server's command line per engine (`engines.py`), what a model name or a run
id serves (`model.py`, `merge.py`), readiness and `serve.json` (`ready.py`), vLLM's warm-up lines
read into progress (`warmup.py`), and the server's own /metrics figures (`figures.py`). Torch-free
except `merge.py`, which the supervisor runs."""
