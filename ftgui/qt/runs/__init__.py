"""Other runs: the Runs dock, run history entries, the comparison view."""
