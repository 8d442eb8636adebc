"""The window's top: Start / Kill / Preempt / Resume / Checkpoint now, the run's state, and the
story line under them (`storyBanner`: the state and the last incident in one sentence)."""

from __future__ import annotations

from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from ftgui.core import formatting
from ftgui.core.timeline.model import Timeline
from ftgui.core.timeline.story import frozen, frozen_words, has_stepped, stopping, story
from ftgui.qt import theme
from ftgui.qt.controls import named_button
from ftgui.qt.window.story_banner import StoryBanner

BUTTON_MIN_WIDTH = 90  # pixels at scale 1


class TopBar(QWidget):
    """The run buttons (`startButton`, `killButton`, `preemptButton`, `resumeButton`,
    `checkpointNowButton`), the state label (`stateLabel`) and the story line (`storyBanner`).

    `show_story(timeline, total_steps)` renders `ftgui.core.timeline.story.story`;
    `set_presenting(on)` makes the story line large (the presentation view) and hides the buttons'
    row when asked."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("topBar")
        self.story_owner: str | None = None  # the run the story line tells, named over a
        # comparison (`RunHistory`); None: the window's run, unnamed
        self.run_name: str | None = None  # the open run's name, where it is one of a demo's
        # several runs (`DemoMenu.story_name`): named when no comparison names one
        self.start_button = named_button("startButton", "Start",
                                         "Start a new run in the run directory")
        self.kill_button = named_button("killButton", "Kill",
                                        "Crash the chief: SIGKILL its processes")
        self.preempt_button = named_button("preemptButton", "Preempt",
                                           "SIGTERM: save at the current step, then stop")
        self.resume_button = named_button("resumeButton", "Resume",
                                          "Restart from the newest valid checkpoint")
        self.checkpoint_button = named_button("checkpointNowButton", "Checkpoint now",
                                              "Save a checkpoint after the current step (SIGUSR1)")
        self.state_label = QLabel("idle")
        self.state_label.setObjectName("stateLabel")
        self.state_label.setWordWrap(True)  # a long state takes two lines, the buttons keep theirs
        self.story_banner = StoryBanner(story(Timeline()))  # at most two lines

        self.buttons_row = QWidget()
        row = QHBoxLayout(self.buttons_row)
        row.setContentsMargins(0, 0, 0, 0)
        for button in self.buttons():
            row.addWidget(button)
        row.addSpacing(12)
        row.addWidget(self.state_label, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self.buttons_row)
        layout.addWidget(self.story_banner)
        self._restyle()
        theme.follow_scale(self, self._restyle)

    def buttons(self) -> tuple[QPushButton, ...]:
        return (self.start_button, self.kill_button, self.preempt_button, self.resume_button,
                self.checkpoint_button)

    def show_run(self, timeline: Timeline, state: str, reason: str,
                 total_steps: int | None = None, watchdog_due_in: float | None = None) -> None:
        """Show the story of `timeline` (a run of `total_steps` steps, when known; a freeze
        the watchdog ends in `watchdog_due_in` seconds) and the run's `state` and `reason` —
        "running" only once a step of the current attempt is in; until then "starting", or
        "restarting" for a later attempt (TensorFlow imports, the checkpoint is restored)."""
        text = story(timeline, total_steps, watchdog_due_in)
        owner = self.story_owner or self.run_name  # whose story this is, among several runs
        if (f"{owner}: " if owner else "") + text != self.story_banner.text():
            self.story_banner.set_story(text, owner)
        if state == "running" and timeline.state == "finished":  # its events are ahead of
            state, reason = timeline.state, timeline.reason  # the supervisor's reaping
        if state == "running" and not has_stepped(timeline):  # a reason (a Slurm job) stays
            state = "restarting" if timeline.attempt > 0 else "starting"  # after a fault too
            reason = " · ".join(filter(None, ("waiting for the first step", reason)))
        if state == "running" and frozen(timeline):
            state, reason = "frozen", frozen_words(timeline, watchdog_due_in)  # a watchdog's
        elif state == "running" and stopping(timeline):  # "running" beside "Preempted at
            state, reason = "stopping", "saving its step"  # step 730 → saving its step…"
        elif state == "running" and timeline.held is not None:
            state, reason = held_words(*timeline.held)
        colour = "recovering" if state in ("starting", "restarting", "frozen", "held",
                                           "stopping") else state  # amber
        if colour != self.state_label.property("state"):
            theme.set_state(self.state_label, colour)
        text = state + (f" — {reason}" if reason else "")
        if text != self.state_label.text():
            self.state_label.setText(text)

    def set_presenting(self, on: bool) -> None:
        """The story line, the run buttons and the state label at the presentation view's
        sizes (`on`, `theme.PRESENTING_PX`) or the normal ones."""
        self.story_banner.setProperty("presenting", bool(on))
        self.story_banner.restyle()
        for widget in (*self.buttons(), self.state_label):
            theme.set_property(widget, "presenting", bool(on))
        self._fit_buttons()
        self._reserve_state_lines()

    def _reserve_state_lines(self) -> None:
        """In the presentation view the state label is always two lines high: one that wrapped
        to two at a hold was painted clipped until the layout caught up, and the story line
        and the plot under it moved 5-10 px each time the state changed (helper-21)."""
        if not self.state_label.property("presenting"):
            self.state_label.setMinimumHeight(0)
            return
        self.state_label.ensurePolished()
        lines = 2 * QFontMetrics(self.state_label.font()).lineSpacing()
        frame = self.state_label.height() - self.state_label.contentsRect().height()
        self.state_label.setMinimumHeight(lines + max(frame, 0))

    def _restyle(self, *_scale) -> None:
        theme.style(*self.buttons(), self.state_label)
        self.story_banner.restyle()
        self._fit_buttons()
        self._reserve_state_lines()

    def _fit_buttons(self) -> None:
        """Each button at least `BUTTON_MIN_WIDTH` and its text wide: beside a demo's panel the
        row was short and "Checkpoint now" lost its first letters; the state label wraps
        instead."""
        for button in self.buttons():
            button.setMinimumWidth(0)
            button.setMinimumWidth(max(round(BUTTON_MIN_WIDTH * theme.scale()),
                                       button.sizeHint().width()))



def held_words(step: int, why: str) -> tuple[str, str]:
    """The state label's (state, reason) while training holds after `step` for `why`: short,
    so that it fits beside the buttons with the demo panel docked at 1280 px (the story line
    says the rest)."""
    if why == "presenter":
        return "held", f"at step {step} for the presenter"
    if why == "standby":
        return "held", f"at step {step} for the warm standby"
    return "held", f"at step {step} for the fault of {formatting.task(why)}"
