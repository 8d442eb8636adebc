"""No object of the supervision package reads another object's private attributes: each
collaborator of the supervisor uses only what it is given (checked on the source)."""

from __future__ import annotations

import ast
from pathlib import Path

import ftgui.core.supervision

PACKAGE = Path(ftgui.core.supervision.__file__).parent


def private_reaches(source: str) -> list[tuple[int, str]]:
    """(line, expression) of each attribute access `X._name` (not a dunder) where X is not
    `self` or `cls`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") \
                or node.attr.startswith("__"):
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_check_finds_a_reach_into_another_object():
    source = "class A:\n    def f(self, other):\n        return other._x, self._y, self.b._z\n"
    assert private_reaches(source) == [(3, "other._x"), (3, "self.b._z")]


def test_no_module_of_supervision_reads_another_objects_private_attributes():
    reaches = {path.name: private_reaches(path.read_text(encoding="utf-8"))
               for path in sorted(PACKAGE.glob("*.py"))}
    assert len(reaches) >= 15  # the whole package was read
    assert {name: found for name, found in reaches.items() if found} == {}
