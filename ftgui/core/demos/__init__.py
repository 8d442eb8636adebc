"""Guided demos: the demo files, one showing's stages, and what a demo claims, checked."""
