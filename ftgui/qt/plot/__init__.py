"""The loss plot: curves, axes, markers, the redone inset, forks, overlays, its tools, focus, look
and export."""
