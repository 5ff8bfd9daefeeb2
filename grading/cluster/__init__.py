"""Grading on a cluster: one assignment's shards (grading/shards.py) as a Slurm job array or a Kubernetes Indexed
Job, then a merge.

Entry points: `python -m grading.cluster.slurm` (`make grade-slurm`: writes the batch scripts and submits them) and
`python -m grading.cluster.k8s` (`make grade-k8s`: writes the Jobs and the script that applies them). What a task asks
for and the command it runs are plan.py's, the same on both. The engines schedule; nothing here does. Every shard runs
`python -m grading.grade --shard /N` with the limits and the sandbox of `make grade`; the merge runs `--merge` once
every shard has ended, however it ended.
"""
