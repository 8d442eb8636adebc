"""The command line of every Python child ftgui starts (`ftgui.child_python.module_argv`)."""

from __future__ import annotations

import sys

import pytest

from ftgui import child_python


@pytest.mark.skipif(sys.version_info < (3, 11), reason="-P is Python 3.11's")
def test_children_keep_the_working_directory_off_their_path_unless_it_holds_ftgui(
        tmp_path, monkeypatch):
    """Installed, or run from any other folder: `-P` (a user's json.py there is not
    imported as json). A source checkout run from its own folder without installing it:
    no `-P`, or the child could not import ftgui at all."""
    monkeypatch.chdir(tmp_path)
    assert child_python.module_argv("ftgui.training", "py") == ["py", "-P", "-m",
                                                                "ftgui.training"]
    monkeypatch.setattr(child_python, "_installed", lambda: False)
    assert child_python.module_argv("m", "py") == ["py", "-P", "-m", "m"]
    monkeypatch.chdir(child_python._SOURCE)
    assert child_python.module_argv("m", "py") == ["py", "-m", "m"]
