"""Running a run: the supervisor, task launch, processes, the cluster, standbys, recovery, the
fault plan and its injection."""
