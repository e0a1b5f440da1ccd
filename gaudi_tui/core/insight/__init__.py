"""Why a job is slow, from torch's own signals: torch.compile's compiles and recompile reasons, and
input stalls, and Intel's runtime metrics file on Gaudi (`runtime`, `rank_files`, `recipes`,
`findings`). Read in the job's process (`compile_watch`, `stalls.StepTimer`) and written to
metrics.jsonl as events; read back from there by the panel (`compiles`, `stalls`). It knows nothing
of jobs, chat or the UI: `core/jobs` imports it, never the other way.
"""
