"""Qt views of ftgui (PySide6 + pyqtgraph); never imports TensorFlow."""
