"""Slurm through its command-line tools (no library; Textual-free).

`cli` runs sbatch/squeue/sinfo/scontrol/sacct/scancel, each with a time limit; `model` turns their
22.05 JSON and `Key=Value` text into jobs and nodes; `reasons` says pending reasons in words;
`hostlist` expands `n[1-2]`; `poll` is the one shared, cached `squeue --json` snapshot that serves
every job the panel and its supervisors watch. In 22.05 the JSON commands ignore every filter and
exit 0 with an `errors` entry when the controller is down: the snapshot then says *why* and every
job in it is "unknown", never "ended".
"""
