"""The headless run's progress on the console: a step line at most every 2 s and one sentence per
notable event, both from the run's `Timeline` (the same sentences as the window's event log),
and what the run waits for when it waits (`ftgui.waiting.RunWaits`: importing TensorFlow,
tracing the first step)."""

from __future__ import annotations

import os
import sys
import time

from ftgui.core import formatting
from ftgui.core.timeline.model import Timeline
from ftgui.waiting import RunWaits

STEP_LINE_SECONDS = 2.0
# `ftgui train` ends with its own line for these (`finished: step N of M, final loss …`)
# run_finished: the summary lines tell it; determinism_warning: `ftgui train` printed it with
# the user-code check, before the run started
NOT_PRINTED = frozenset({"run_finished", "determinism_warning"})


def tell_stderr(text: str) -> None:
    """Print `text` on standard error; where the reader has gone (`ftgui train … 2>&1 | head`),
    the rest of the process writes its errors to nothing instead of raising BrokenPipeError: in a
    signal handler that error ended the run with SIGKILLs instead of the preemption the signal
    asked for (a new user lost the step it had reached)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except BrokenPipeError:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the rest of the process)


class Progress:
    """Prints the progress of `ftgui train`. `show(event)` takes the run's events in file order;
    `quiet` prints nothing; the step line's loss is `formatting.loss` ("0.2500"; an event's null
    loss, a non-finite one, is "nan"). `last_loss` is the loss of the newest step event (None for a
    non-finite one, as events store it); `timeline` is what has been shown so far."""

    def __init__(self, quiet: bool = False):
        self.quiet = quiet
        self.last_loss = None
        self.timeline = Timeline()
        self.waits = RunWaits()
        self._last_print = 0.0

    def prime(self, history: list[dict]) -> None:
        """Take the run's earlier events (a resume's) into the timeline without printing
        them, so that `summary` tells the incidents of the whole run, as the window does."""
        self.timeline.feed(history)

    def show(self, event: dict) -> None:
        """Print what `event` tells (see the class)."""
        self.show_all([event])

    def show_all(self, events: list[dict]) -> None:
        """`show` each of `events` (a poll's, in file order). A run of step events goes into
        the timeline at once: one at a time, its numpy work cost the supervisor ~3 ms a poll
        (6 % of a core beside a 650 steps/s trainer, on the cores the trainer needs)."""
        try:
            start = 0
            while start < len(events):
                end = start
                while end < len(events) and events[end]["event"] == "step":
                    end += 1
                if end > start:
                    self._show_steps(events[start:end])
                else:
                    self._show_other(events[start])
                    end += 1
                start = end
        except BrokenPipeError:  # `ftgui train … | head`: the reader left; training goes on
            self.quiet = True
            sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the rest of the process)

    def tick(self, now: float) -> None:
        """Print what the run waits for, when a line is due at `now` (Unix seconds)."""
        lines = self.waits.tick(now)
        if self.quiet:
            return
        try:
            for line in lines:
                print(line, flush=True)
        except BrokenPipeError:
            self.quiet = True
            sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (for the rest of the process)

    def _show_steps(self, steps: list[dict]) -> None:
        self.timeline.feed(steps)
        for event in steps:
            self.waits.feed(event)
        newest = steps[-1]
        self.last_loss = newest["loss"]
        if not self.quiet and time.time() - self._last_print > STEP_LINE_SECONDS:
            self._last_print = time.time()
            loss = "nan" if newest["loss"] is None else formatting.loss(newest["loss"])
            recovered = "  (from the checkpoint)" if newest.get("from_checkpoint") else ""
            print(f"step {newest['step']}  loss {loss}{recovered}", flush=True)

    def _show_other(self, event: dict) -> None:
        changes = self.timeline.feed([event])
        self.waits.feed(event)
        if not self.quiet and event["event"] not in NOT_PRINTED:
            for note in changes.notes:
                print(note.text, flush=True)

    def summary(self) -> list[str]:
        """The lines `ftgui train` ends with when the run had incidents: the story sentence
        (what the window's banner says, to the character), and with more than one incident,
        the totals over the run (`story.incidents_line`) — at the end of a finished run the
        banner holds them, and the line before it tells the last incident. [] without
        incidents."""
        from ftgui.core.timeline.story import incident_line, incidents_line, story

        incidents = self.timeline.incidents
        if not incidents:
            return []
        banner = story(self.timeline)
        if len(incidents) == 1:
            return [banner]
        totals = incidents_line(self.timeline.totals())
        if banner.endswith(totals):
            return [f"Last incident: {incident_line(incidents[-1])}", banner]
        return [banner, totals[:1].upper() + totals[1:]]
