"""Training processes: the only package of ftgui that imports TensorFlow.

Where things are (in the shape of TensorFlow's Orbit library): `__main__` starts one training
process; `step` holds the model, optimizer and traced distributed step; `loop` runs the steps and
turns what follows into an exit status (no TensorFlow); `actions/` are the small pieces run after
steps (step events and heartbeats, TensorBoard, NaN rollback, checkpoints, scheduled faults);
`assemble` puts them together. Beside them: `data`, `models`, `strategies`, `parameter_server`,
`background_save` and `checkpoint_writer` (checkpoints off the step path), `state_variables` (every
variable a save must hold, from TensorFlow's object graph), `resume_probe` (the user-code check's
step, save, restore, step again), `summaries`, `signals`, `peer_watch` (a multi-worker process stops
waiting for a peer the supervisor saw go), `fit_loop` (Keras `model.fit`, for comparison),
`devices`, `inspect_checkpoint`.
"""
