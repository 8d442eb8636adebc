"""ftgui: make fault-tolerant distributed TensorFlow training visible."""

__version__ = "0.1.0"
