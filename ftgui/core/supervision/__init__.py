"""Running a run: the supervisor (it decides), the launcher seam and the local launcher (they do
the process work), task launch, processes, the cluster, standbys, recovery, the fault plan and
its injection."""
