"""Checkpoints without TensorFlow: listing and validation, the state file, retention, the clerk,
moves, snapshots, restore point, resume check."""
