"""Following growing files: the byte-offset tail behind the event reader and the log view."""

from __future__ import annotations

from ftgui.core.record.logs import LogTail
from ftgui.core.record.tail import Tail


def test_a_tail_returns_complete_lines_and_holds_back_a_torn_one(tmp_path):
    path = tmp_path / "growing.txt"
    tail = Tail(path)
    assert tail.read_lines(100) == []  # no file yet
    path.write_bytes(b"one\ntw")
    assert tail.read_lines(100) == [b"one"]
    assert tail.bytes_read == 6
    with open(path, "ab") as handle:
        handle.write(b"o\nthree\n")
    assert tail.read_lines(100) == [b"two", b"three"]
    assert tail.read_lines(100) == []


def test_a_tail_reads_a_line_longer_than_one_read_in_pieces(tmp_path):
    path = tmp_path / "long.txt"
    path.write_bytes(b"x" * 10 + b"\nend\n")
    tail = Tail(path)
    assert tail.read_lines(4) == []
    assert tail.read_lines(4) == []
    assert tail.read_lines(100) == [b"x" * 10, b"end"]


def test_a_tail_goes_on_from_where_it_is_told(tmp_path):
    path = tmp_path / "events.txt"
    path.write_bytes(b"read elsewhere\nnew\n")
    tail = Tail(path)
    tail.seek(len(b"read elsewhere\n"))
    assert tail.read_lines(100) == [b"new"]


def test_a_log_line_split_inside_a_character_is_decoded_whole(tmp_path):
    path = tmp_path / "chief.log"
    text = "step 3: loss 0.25 — ok ✓\n"
    data = text.encode()
    cut = data.index("✓".encode()) + 1  # in the middle of the check mark's three bytes
    path.write_bytes(data[:cut])
    log = LogTail(path)
    assert log.read_lines() == []
    with open(path, "ab") as handle:
        handle.write(data[cut:] + b"bad \xff byte\n")
    assert log.read_lines() == ["step 3: loss 0.25 — ok ✓", "bad \ufffd byte"]
