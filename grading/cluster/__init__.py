"""Grading on a cluster: one assignment's shards (grading/shards.py) as a Slurm job array, then a merge job.

Entry point: `python -m grading.cluster.slurm` (`make grade-slurm`), which writes the batch scripts and submits them.
The engines schedule; nothing here does. Every shard runs `python -m grading.grade --shard /N` with the limits and the
sandbox of `make grade`; the merge runs `--merge` once every shard has ended, however it ended.
"""
