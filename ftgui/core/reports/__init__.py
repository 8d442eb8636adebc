"""A run written out: the HTML report, its SVG plot, the loss curves as CSV."""
