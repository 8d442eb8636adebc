"""Training processes: the only package of ftgui that imports TensorFlow."""
