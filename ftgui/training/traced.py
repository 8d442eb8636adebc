"""`traced`: `tf.function` without autograph, for ftgui's own step, read, copy and write
functions."""

from __future__ import annotations

import tensorflow as tf


def traced(function):
    """`tf.function(function, autograph=False)`: traced as written, not rewritten first.

    ftgui's traced functions hold no Python `if`/`for`/`while` on a tensor, which is all
    autograph converts; converting them (reading their source, writing and importing a
    generated module per function) took ~0.35 s of every MLP trainer's first step, 0.65-1.04 s
    against 0.99-1.37 s from `training_started` (3 interleaved starts each, AMD EPYC,
    2026-12-06), with the same losses to the bit. What a user's model computes does not change:
    autograph never converts Keras's own code (a layer's `call` runs through Keras's
    `__call__`), and Keras 3's `model.fit` traces its step with autograph off too
    (`keras/src/backend/tensorflow/trainer.py`, `do_not_convert`). A user function decorated
    with `@tf.function` is still converted, as its own decorator says.
    """
    return tf.function(function, autograph=False)
