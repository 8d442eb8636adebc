"""A run as a timeline: the one model every view shows, its story line, figures (goodput), replay,
curve buffers."""
