"""Exit statuses of a training process, shared by the trainer and the supervisor."""

FINISHED = 0  # reached the last step
BAD_CONFIG = 2  # refused its configuration before training
NON_FINITE = 3  # the loss became NaN or infinite and no rollback was possible
DAMAGED_CHECKPOINT = 4  # the checkpoint to restore would not load; it is now marked invalid
PREEMPTED = 42  # saved at the current step on SIGTERM and stopped (TensorFlow's own code)

REASONS = {
    FINISHED: "finished",
    BAD_CONFIG: "bad configuration",
    NON_FINITE: "non-finite loss",
    DAMAGED_CHECKPOINT: "damaged checkpoint",
    PREEMPTED: "preempted",
}
