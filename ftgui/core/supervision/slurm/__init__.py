"""Running a run's training processes as one Slurm batch job: the checks before a submission,
the job script, watching the job, and the launcher behind the supervisor."""
