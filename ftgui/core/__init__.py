"""Qt-free, TensorFlow-free core, in rooms top to bottom: demos; supervision and reports;
checkpoints and the timeline; the run record; settings; under them all, `formatting`
(docs/architecture.md, Layout)."""
