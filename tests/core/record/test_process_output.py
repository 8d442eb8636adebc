"""A training process's own output: the error that ended it, in one line a room can read."""

from __future__ import annotations

from ftgui.core.record.process_output import MAX_ERROR_CHARS, OutputFollower, error_sentence

GRAPH_ERROR = """Graph execution error:

Detected at node CollectiveReduceV2 defined at (most recent call last):
  File "ftgui/training/step.py", line 80, in train_step
Collective ops is aborted by: Socket closed
\t [[{{node CollectiveReduceV2}}]] [Op:__inference_train_step_1234]"""


def test_a_lost_peer_is_said_in_words_not_tensorflows_graph_message():
    assert error_sentence("UnavailableError", GRAPH_ERROR) == (
        "UnavailableError: lost contact with another task of the cluster")
    assert error_sentence("InternalError", GRAPH_ERROR) == (
        "InternalError: Collective ops is aborted by: Socket closed")


def test_a_tensorflow_message_skips_its_announcing_lines():
    message = "Graph execution error:\n\nDetected at node add\nIncompatible shapes: [2] vs. [3]"
    assert error_sentence("InvalidArgumentError", message) == (
        "InvalidArgumentError: Incompatible shapes: [2] vs. [3]")
    assert error_sentence("ValueError", "  bad width\nmore") == "ValueError: bad width"
    assert error_sentence("KeyError", "") == "KeyError"
    long = error_sentence("RuntimeError", "x" * 500)
    assert len(long) == MAX_ERROR_CHARS and long.endswith("…")


def test_a_tensorflow_node_error_skips_the_stack_it_prints_before_the_message():
    message = ("Graph execution error:\n\n"
               "Detected at node 'add' defined at (most recent call last):\n"
               '  File "ftgui/training/step.py", line 80, in train_step\n'
               "    loss = model(x)\n"
               "Node: 'add'\n"
               "Incompatible shapes: [2] vs. [3]\n"
               "\t [[{{node add}}]] [Op:__inference_train_step_99]")
    assert error_sentence("InvalidArgumentError", message) == (
        "InvalidArgumentError: Incompatible shapes: [2] vs. [3]")


def test_the_follower_keeps_the_last_line_of_the_newest_traceback(tmp_path):
    log = tmp_path / "chief-0.log"
    log.write_text("I0000 00:00 tensorflow noise\n"
                   "Traceback (most recent call last):\n"
                   '  File "x.py", line 1, in <module>\n'
                   "tensorflow.python.framework.errors_impl.UnavailableError: Graph execution "
                   "error:\n")
    follower = OutputFollower(log)
    assert len(follower.read_lines()) == 4
    assert follower.error == "UnavailableError: Graph execution error:"
