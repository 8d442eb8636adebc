"""A guided demo in the window: the Demo menu and the explanation panel."""
