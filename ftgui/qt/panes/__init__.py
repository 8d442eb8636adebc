"""The panes beside and under the plot: configuration, checkpoints (table, dialog, actions),
incidents, processes."""
