"""The small Qt controls every view makes alike: buttons and actions found by `objectName`
(the tests and DESIGN.md's widget names), and menus of actions that emit a signal."""

from __future__ import annotations

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QPushButton


def named_button(name: str, text: str, tip: str) -> QPushButton:
    """A push button labelled `text`, with `objectName` `name` and the tooltip `tip`."""
    button = QPushButton(text)
    button.setObjectName(name)
    button.setToolTip(tip)
    return button


def named_action(parent, name: str, text: str, slot,
                 shortcut: QKeySequence | None = None) -> QAction:
    """An action of `parent` labelled `text`, `objectName` `name`, calling `slot` when
    triggered, with an optional `shortcut`."""
    action = QAction(text, parent)
    action.setObjectName(name)
    if shortcut is not None:
        action.setShortcut(shortcut)
    action.triggered.connect(slot)
    return action


def add_signal_actions(menu: QMenu, entries, value) -> None:
    """Append one action per (text, signal, enabled) of `entries` to `menu`; triggering one
    emits its signal with `value` (the row's step, the process's name)."""
    for text, signal, enabled in entries:
        action = QAction(text, menu)
        action.setEnabled(enabled)
        action.triggered.connect(lambda _=False, s=signal: s.emit(value))
        menu.addAction(action)
