"""How every view writes a number: sizes, durations, percentages, steps and losses.

One module so that the same checkpoint reads the same in the log, the checkpoint table, the
checkpoint dialog, `ftgui checkpoints` and the report (`ftgui checkpoints --json` keeps raw
integers: it is a machine contract). No Qt, no TensorFlow.

Units:

- **Sizes** are SI, powers of 1000: B, kB, MB, GB, TB, PB, EB, one decimal ("61.1 kB"). The
  run's own figures are counted that way (a `checkpoint_saved` event's `size` and the
  metadata's file sizes are bytes as `stat` gives them, `ls -l` and `du --si` agree), and a
  kB that is 1000 bytes needs no footnote; IEC KiB (1024) would read 59.6 for a size every
  other tool calls 61.1 kB. Where a person compares bytes, `exact_size` adds them:
  "61.1 kB (61,074 bytes)".
- **Durations** are seconds with a space before the unit: tenths for what a run costs
  ("7.7 s": time lost, delays, heartbeats), hundredths for short measurements (`digits=2`:
  "0.05 s" to detect a fault, save a checkpoint).
- **Percentages** are whole ("52 %") unless a view asks for more digits (accuracy, "66.7 %").
- **Steps** are plain integers, never with thousands separators ("step 1200"): a step is an
  identifier a user types back (`--kill-at-step 1200`, `ckpt-1200`). Counts of things that are
  not steps (bytes, parameters) get separators (`count`: "57,748").
- **Losses** get four decimals between 0.001 and 10,000 ("2.3026", "0.0043") and four
  significant digits in scientific notation outside ("1.000e-05", "1.235e+30"), so that
  neither a tiny nor a huge loss prints as "0.0000" or as thirty digits. Where bits matter
  (the comparison's final losses, `ftgui train`'s last line) the full `repr` is printed
  instead, on purpose.

Every function writes `—` (`MISSING`) for None, and for a NaN or infinite duration, size or
percentage (a figure that could not be measured); a loss keeps "nan" and "inf": a non-finite
loss is a fact about the run.
"""

from __future__ import annotations

import math
import re

MISSING = "—"
SIZE_UNITS = ("kB", "MB", "GB", "TB", "PB", "EB")
LOSS_FIXED_RANGE = (1e-3, 1e4)  # |loss| in [low, high): four decimals; outside: scientific


def _unknown(value) -> bool:
    return value is None or (isinstance(value, float) and not math.isfinite(value))


def size(value: float | None) -> str:
    """A size in bytes, SI: "0 B", "999 B", "1.0 kB", "61.1 kB", "1.0 MB", "9.2 EB".

    Bytes below 1000 are whole; above, one decimal of the largest unit that keeps the number
    under 1000 once rounded (999,999 bytes is "1.0 MB", not "1000.0 kB"). Negative sizes keep
    their sign; None or NaN: "—".
    """
    if _unknown(value):
        return MISSING
    if value < 0:
        return "-" + size(-value)
    if round(value) < 1000:
        return f"{round(value)} B"
    scaled = float(value)
    for unit in SIZE_UNITS:
        scaled /= 1000
        text = f"{scaled:.1f}"
        if float(text) < 1000 or unit == SIZE_UNITS[-1]:
            return f"{text} {unit}"
    raise AssertionError("unreachable")


def exact_size(value: int | None) -> str:
    """`size` with the exact bytes where a person needs them: "61.1 kB (61,074 bytes)";
    below 1000 bytes `size` alone is exact ("999 B")."""
    if _unknown(value) or abs(value) < 1000:
        return size(value)
    return f"{size(value)} ({count(value)} bytes)"


def count(value: int | None) -> str:
    """A count of things that are not steps, with thousands separators: "57,748"."""
    return MISSING if _unknown(value) else f"{round(value):,}"


def seconds(value: float | None, digits: int = 1) -> str:
    """A duration in seconds: "7.7 s" (tenths, the default), "0.05 s" with `digits=2`.

    Negative durations keep their sign ("-1.5 s"; one that rounds to zero is "0.0 s");
    None, NaN or infinite: "—".
    """
    if _unknown(value):
        return MISSING
    text = f"{value:.{digits}f}"
    if float(text) == 0:
        text = f"{0:.{digits}f}"  # no "-0.0 s"
    return f"{text} s"


def stall(value: float | None) -> str:
    """How long checkpoints held training, never "0.00 s" for a cost that was paid: under
    0.1 s in milliseconds with two significant digits ("4.2 ms", "28 ms", "0.40 ms"), else
    `seconds` in hundredths ("0.25 s"); 0 is "0 ms"; None, NaN or infinite: "—". A room read
    "6 checkpoints: 0.00 s stalled" beside "60 checkpoints: 0.03 s" as saves that cost
    nothing."""
    if _unknown(value):
        return MISSING
    if abs(value) >= 0.1:
        return seconds(value, digits=2)
    return _milliseconds(value)


def stalls(values: list[float | None]) -> list[str]:
    """`stall` for a column of runs, in one unit so that they compare at a glance: all in
    milliseconds while every one is under 0.1 s ("4.2 ms", "28 ms"), else all in seconds,
    with the decimals that give the smallest paid one two significant digits, 2 to 3
    ("0.016 s", "0.220 s"). A presenter read "16 ms" beside "0.22 s" as two scales. One
    value reads as `stall` gives it. None, NaN or infinite: "—"."""
    known = [abs(v) for v in values if not _unknown(v)]
    if all(v < 0.1 for v in known):
        return [MISSING if _unknown(v) else _milliseconds(v) for v in values]
    paid = [v for v in known if v > 0]
    digits = min(3, max(2, 1 - math.floor(math.log10(min(paid)))))
    return [seconds(v, digits=digits) for v in values]


def _milliseconds(value: float) -> str:
    """`value` seconds in milliseconds with two significant digits ("4.2 ms", "220 ms");
    0 is "0 ms"."""
    ms = value * 1000
    if ms == 0:
        return "0 ms"
    digits = max(0, 1 - math.floor(math.log10(abs(ms))))
    return f"{ms:.{digits}f} ms"


def percent(fraction: float | None, digits: int = 0) -> str:
    """A fraction 0–1 as a percentage: "52 %", "66.7 %" with `digits=1`; None or NaN: "—"."""
    if _unknown(fraction):
        return MISSING
    return f"{100 * fraction:.{digits}f} %"


def plural(number: int | str, noun: str, many: str | None = None) -> str:
    """`noun` as `number` of them need it: "step" for 1, else `many` (default `noun` + "s")."""
    return noun if str(number) == "1" else (many or noun + "s")


def counted(number: int | str, noun: str, many: str | None = None) -> str:
    """`number` and its noun: "1 checkpoint", "2 checkpoints", "2 chief processes" (`many`)."""
    return f"{number} {plural(number, noun, many)}"


def task(target: str) -> str:
    """A task or fault target in words: "worker:1" → "worker 1" ("chief" stays)."""
    return target.replace(":", " ")


def steps(number: int) -> str:
    """A number of steps in words: "1 step", "106 steps" (no thousands separator)."""
    return counted(number, "step")


def loss(value: float | None) -> str:
    """A loss for reading: "2.3026", "0.0043", "1.000e-05", "1.235e+30", "nan", "inf";
    None: "—" (where None means a non-finite loss, as in an event, the caller says "nan")."""
    if value is None:
        return MISSING
    if not math.isfinite(value):
        return str(float(value))  # "nan", "inf", "-inf"
    low, high = LOSS_FIXED_RANGE
    if value == 0 or low <= abs(value) < high:
        return f"{value:.4f}"
    return f"{value:.3e}"


NO_BREAK = "\u00a0"  # a no-break space


def unbroken_units(text: str) -> str:
    """`text` with each number kept on one line with its unit when a label wraps it ("93 %",
    "3.6 s" joined by `NO_BREAK`): a room saw "goodput 93" and "%" alone on the next line."""
    return re.sub(r"(\d) (%|s\b)", rf"\1{NO_BREAK}\2", text)
