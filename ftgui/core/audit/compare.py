"""The first difference between a fault run's logged values and the reference's, to the bit.

Every `step` event's loss and every `validation` event's values (val_loss, val_accuracy and a
model's own metrics) of every attempt are compared with the reference's at the same global step
(and worker, where several log): a step computed twice must match both times. The loss a NaN
fault poisoned on purpose (the `step` event of that step in the attempt the fault was injected
in, with no loss) is the fault itself, not a difference; so is a validation at a step the
reference did not validate (a preemption's save evaluates too). A step or validation of the
reference the run never logged is a difference. JSON keeps a float's shortest round-trip digits, so
equal values in the events are equal floats.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

VALIDATION_KEYS = ("val_loss", "val_accuracy")
MISSING = " missing"


@dataclass(frozen=True)
class Difference:
    """A value of the run at global `step` (attempt `attempt`) that is not the reference's:
    `what` (loss, val_loss, val_accuracy, a metric's name), `got` and `expected` (None: not
    logged, or not finite)."""

    step: int
    what: str
    attempt: int
    got: float | None
    expected: float | None

    def text(self) -> str:
        """One line: 'step 41: loss 0.2125… (attempt 1), reference 0.2126…'."""
        if self.what.endswith(MISSING):
            return (f"step {self.step}: {self.what.removesuffix(MISSING)} never logged, "
                    f"reference {self.expected!r}")
        return (f"step {self.step}: {self.what} {self.got!r} (attempt {self.attempt}), "
                f"reference {self.expected!r}")


def same_bits(a, b) -> bool:
    """Whether two logged values are the same float to the last bit (None, NaN's null, equal
    to None; -0.0 differs from 0.0)."""
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def _who(event: dict) -> tuple:
    return (event.get("role", "chief"), event.get("index", 0))


def _values(event: dict) -> dict[str, object]:
    if event["event"] == "step":
        return {"loss": event.get("loss")}
    values = {key: event.get(key) for key in VALIDATION_KEYS if key in event}
    values.update(event.get("metrics") or {})
    return values


def logged(events: list[dict]) -> dict[tuple, dict[str, object]]:
    """(event type, global step, role, index) -> {name: value} of a run's step and validation
    events (the last one logged wins)."""
    table: dict[tuple, dict[str, object]] = {}
    for event in events:
        if event.get("event") in ("step", "validation") and isinstance(event.get("step"), int):
            table[(event["event"], event["step"], *_who(event))] = _values(event)
    return table


def _poisoned(events: list[dict]) -> set[tuple[int, int]]:
    return {(e.get("attempt", 0), e.get("step")) for e in events
            if e.get("event") == "fault_injected" and e.get("kind") == "nan"}


def differences(reference: list[dict], run: list[dict]) -> list[Difference]:
    """Every difference of `run`'s events from `reference`'s, by step (see the module)."""
    expected = logged(reference)
    poisoned = _poisoned(run)
    found: list[Difference] = []
    seen: set[tuple] = set()
    for event in run:
        if event.get("event") not in ("step", "validation") or not isinstance(
                event.get("step"), int):
            continue
        attempt = event.get("attempt", 0)
        if event["event"] == "step" and event.get("loss") is None and (
                attempt, event["step"]) in poisoned:
            continue  # the NaN the fault put there
        key = (event["event"], event["step"], *_who(event))
        if event["event"] == "validation" and key not in expected:
            continue  # an extra evaluation (a preemption's save), not another value
        seen.add(key)
        wanted = expected.get(key, {})
        for name, value in _values(event).items():
            if name not in wanted or not same_bits(value, wanted[name]):
                found.append(Difference(event["step"], name, attempt, value, wanted.get(name)))
    for key in sorted(set(expected) - seen, key=lambda k: (k[1], k[0])):
        kind, step = key[0], key[1]
        found.append(Difference(step, f"{'loss' if kind == 'step' else 'validation'}{MISSING}",
                                -1, None, next(iter(expected[key].values()), None)))
    return sorted(found, key=lambda difference: difference.step)  # stable: file order


def first_difference(reference: list[dict], run: list[dict]) -> Difference | None:
    """The difference at the earliest global step (`differences`), or None: every logged
    value is the reference's, to the bit."""
    found = differences(reference, run)
    return found[0] if found else None
