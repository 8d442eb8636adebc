"""The loss of every step as a TensorBoard scalar (through `ftgui.training.summaries`)."""

from __future__ import annotations

from ftgui.training.actions import Action, StepOutput


class LossSummary(Action):
    """Queues each step's loss on `summaries` (a `Summaries`; a no-op one on workers other than
    the chief) and closes it at the end. A run that starts after step 0 (resumed, forked) first
    tells TensorBoard that steps from `start_step + 1` are logged anew."""

    def __init__(self, summaries, start_step: int):
        self.summaries = summaries
        if start_step > 0:
            summaries.restart_at(start_step + 1)

    def __call__(self, output: StepOutput) -> None:
        self.summaries.scalar("loss", output.loss, output.step)
        return None

    def close(self) -> None:
        self.summaries.close()
