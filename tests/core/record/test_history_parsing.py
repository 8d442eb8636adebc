"""Opening a run parses its step lines a chunk at a time with msgspec: the floats must be the
bits Python's json reads, and every odd line must be kept or skipped as the line-by-line reader
keeps or skips it."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from ftgui.core.record import event_history
from ftgui.core.record.events import EventWriter


def _decimal_strings(seed: int, count: int) -> list[str]:
    """Hard cases for a float parser: 1-39 digit mantissas, exponents from -320 to 300
    (subnormals, halfway cases), signs, plain decimals."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        digits = str(rng.randrange(1, 10 ** rng.randrange(1, 40)))
        if rng.random() < 0.5:
            sign = "-" if rng.random() < 0.2 else ""
            texts.append(f"{sign}{digits[0]}.{digits[1:] or '0'}e{rng.randrange(-320, 300)}")
        else:
            texts.append(f"{digits[:rng.randrange(1, len(digits) + 1)]}.{digits}")
    return texts


def test_msgspec_reads_the_float_bits_python_json_reads():
    texts = _decimal_strings(3, 50_000)
    data = ("\n".join(f'{{"event":"step","loss":{t}}}' for t in texts) + "\n").encode()
    parsed = event_history._decode_lines(b"[" + data[:-1].replace(b"\n", b",") + b"]")
    got = np.array([line.loss for line in parsed], dtype=np.float64)
    want = np.array([json.loads(t) for t in texts], dtype=np.float64)
    assert got.tobytes() == want.tobytes()  # to the bit, -0.0 and subnormals included


ODD_LINES = [  # each alone in a chunk of good step lines
    '5',  # JSON, but no object: msgspec refuses the chunk
    '["event", "step"]',
    '{"time":9.5,"attempt":0,"step":3,"loss":0.5}',  # no event
    '{"event":["step"],"time":9.5,"attempt":0,"step":3,"loss":0.5}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":1e999}',  # out of range
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":0.5,"step":4}',  # last one wins
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":0.5,"mono":null}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":0.5,"clock":7}',
    '{"event":"step","time":9.5,"attempt":0,"step":3,"loss":0.5,"clock":"other"}',
    '{"event":"step","time":9.5,"attempt":0,"step":3}',  # no loss: a gap
    '{"event":"step","time":9.5,"attempt":true,"step":3,"loss":0.5}',
    '{"event":"checkpoint_saved","time":9.5,"attempt":0,"step":3,"path":"ckpt-3"}',
    '',
]


@pytest.mark.parametrize("odd", ODD_LINES)
def test_a_chunk_with_an_odd_line_is_read_as_line_by_line(tmp_path, monkeypatch, odd):
    with EventWriter(tmp_path, 0) as writer:
        for step in range(1, 30):
            writer.emit("step", step=step, loss=1 / step, epoch=0)
    with open(tmp_path / "events.jsonl", "a") as handle:
        handle.write(odd + "\n")
    with EventWriter(tmp_path, 1) as writer:
        for step in range(20, 40):
            writer.emit("step", step=step, loss=2 / step, epoch=1)
    read = event_history.read_history(tmp_path)
    monkeypatch.setattr(event_history, "_chunk_columns", lambda *args: None)
    by_line = event_history.read_history(tmp_path)
    for name in event_history._COLUMNS:
        np.testing.assert_array_equal(getattr(read.steps, name), getattr(by_line.steps, name))
    assert read.others == by_line.others
    assert read.end_offset == by_line.end_offset
    assert len(read.steps) >= 29 + 20


def test_the_trainers_lines_are_read_in_columns(tmp_path):
    """Steps with `mono`, the first naming its clock, and a checkpoint event between them: the
    chunk path reads them (no fall back to one parse per line)."""
    with EventWriter(tmp_path, 0) as writer:
        for step in range(1, 30):
            writer.emit("step", step=step, loss=None if step == 4 else 1 / step, epoch=0)
            if step % 10 == 0:
                writer.emit("checkpoint_saved", step=step, path=f"ckpt-{step}")
    data = (tmp_path / "events.jsonl").read_bytes()
    columns, clocks, others = event_history._chunk_columns(data, 0, True)
    lines, attempts, steps, times, losses, monos = columns
    assert steps.tolist() == list(range(1, 30))
    assert np.isnan(losses[3]) and losses[9] == 1 / 10
    assert not np.isnan(monos).any()
    assert [row for row, _ in clocks] == [0]
    assert [(line, e["step"]) for line, e in others] == [(10, 10), (21, 20)]
