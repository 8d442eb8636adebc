"""Exactly the variables a training state holds, from TensorFlow's object graph.

A checkpoint (`tf.train.Checkpoint`) saves every variable its object graph reaches; Keras 3's
`model.variables` lists only the variables made through Keras (`add_weight`, layers' weights),
not a plain `tf.Variable` a user's layer keeps as an attribute (a warm-up counter, DESIGN.md
§4). What a snapshot, a shadow copy for the background save or a just-in-time save copies, and
what a warm standby puts back, is the list `state_variables` gives, so all of them hold what a
checkpoint holds: the model's variables, the optimizer's, every other variable of the object
graph (in the graph's breadth-first order, which is the same for two states built alike), and
the global step last.
"""

from __future__ import annotations

import re

import keras
import tensorflow as tf


def _is_variable(value) -> bool:
    return isinstance(value, (tf.Variable, keras.Variable))


def graph_variables(root) -> list:
    """Every variable that the object graph of `root` (a `tf.train.Checkpoint`, a model)
    reaches (for a checkpoint: what `checkpoint.write` saves), breadth-first, each once."""
    seen, found = set(), []
    for value in tf.train.TrackableView(root).descendants():
        if _is_variable(value) and id(value) not in seen:
            seen.add(id(value))
            found.append(value)
    return found


def untracked_extras(model, optimizer, step, checkpoint: tf.train.Checkpoint) -> list:
    """The variables of `checkpoint`'s object graph that are neither the model's, the
    optimizer's nor `step` (e.g. a plain `tf.Variable` kept by a user's layer), in graph
    order; the checkpoint's own save counter is left out (it is not training state)."""
    listed = {id(v) for v in (*model.variables, *optimizer.variables, step)}
    counter = getattr(checkpoint, "_save_counter", None)
    return [v for v in graph_variables(checkpoint)
            if id(v) not in listed and v is not counter]


def state_variables(state) -> list:
    """Every variable of a training state (anything with `model`, `optimizer`, `step` and
    `checkpoint`): the model's, the optimizer's, the other variables of the checkpoint's
    object graph, then the global step (last: a snapshot's payload ends with it)."""
    extras = untracked_extras(state.model, state.optimizer, state.step, state.checkpoint)
    return [*state.model.variables, *state.optimizer.variables, *extras, state.step]


def name_of(variable) -> str:
    """A variable's path (Keras) or name (TensorFlow, without a replica's `/replica_N` and the
    `:0` output index), for messages."""
    return re.sub(r"(/replica_\d+)?:\d+$", "", str(getattr(variable, "path", None)
                                                   or variable.name))


def components(variable) -> tuple:
    """The TensorFlow resource variables behind `variable` (a Keras variable's own, each
    replica's copy of a distributed one): what a traced function's graph names."""
    inner = getattr(variable, "_value", variable) if isinstance(variable, keras.Variable) \
        else variable
    if isinstance(inner, tf.distribute.DistributedValues):
        return tuple(inner.values)
    return (inner,)


def unsaved_in(functions, saved: list) -> list[str]:
    """Names of the variables that the traced `functions` (tf.functions already called) read
    or write but that are not among `saved` (nor behind them): state no checkpoint holds, such
    as a `tf.Variable` kept in a module's global. Sorted, each once."""
    # a traced step names each replica's copy, or the distributed variable itself (a
    # `tf.random.Generator`'s state under `mirrored`, read in cross-replica context)
    held = {id(c) for v in saved for c in (v, getattr(v, "_value", v), *components(v))}
    names = set()
    for graph in traced_graphs(functions):
        names.update(name_of(v) for v in graph.variables if id(v) not in held)
    return sorted(names)


def traced_graphs(functions) -> list:
    """The graphs of every concrete function the tf.functions `functions` have traced so
    far (none for one never called); traces nothing. `…_for_serialization()` traced each once
    more for its own signature: ~0.6 s of the user-code check's ~9 s CPU (2026-12-06)."""
    return [concrete.graph for function in functions
            for concrete in function._list_all_concrete_functions() or []]
