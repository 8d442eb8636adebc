"""The run record in RUN/: the event file and its reading, exit codes and states, the run listing,
notes, lock, process output, incidents."""
