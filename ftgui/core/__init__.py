"""Qt-free, TensorFlow-free core: configuration, events, checkpoints and the supervisor."""
