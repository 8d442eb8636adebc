"""Help → About ftgui (the versions a bug report needs) and Help → Documentation (the README).

Documentation is shown inside ftgui, rendered from Markdown: the project's README.md when ftgui
runs from a source checkout or an editable install, else the README text every installed
package carries in its metadata (pyproject's `readme`), so it works without a network.
"""

from __future__ import annotations

import html
from importlib import metadata
from pathlib import Path

from PySide6.QtCore import QObject, Qt
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QTextCursor, QTextDocument
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ftgui.qt.app_icon import app_icon
from ftgui.versions import stack_versions

IMAGE_WIDTH = 880  # pixels: the README's screenshot, shrunk to the documentation window
README = Path(__file__).resolve().parents[2] / "README.md"  # beside the ftgui package


def versions_text(versions: dict[str, str]) -> str:
    """Plain text, one `name version` per line: what Copy puts on the clipboard."""
    return "\n".join(f"{name} {version}" for name, version in versions.items())


class AboutDialog(QDialog):
    """ftgui's icon, purpose and the versions of ftgui, Python, PySide6, Qt, pyqtgraph and
    TensorFlow (from package metadata: TensorFlow is not imported), with a Copy button."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("aboutDialog")
        self.setWindowTitle("About ftgui")
        self.versions = stack_versions()
        icon = QLabel()
        icon.setPixmap(app_icon().pixmap(96, 96))
        icon.setAlignment(Qt.AlignmentFlag.AlignTop)
        rows = "".join(
            f"<tr><td>{html.escape(name)}</td><td><b>{html.escape(version)}</b></td></tr>"
            for name, version in self.versions.items()
        )
        text = QLabel(
            f"<h2>ftgui {html.escape(self.versions['ftgui'])}</h2>"
            "<p>Fault-tolerant distributed TensorFlow training, made visible:<br>"
            "live loss, checkpoints, kill and resume.</p>"
            f"<table cellspacing='0' cellpadding='2'>{rows}</table>"
            "<p>Licensed under the Apache License 2.0.</p>"
        )
        text.setObjectName("aboutText")
        text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        top = QHBoxLayout()
        top.addWidget(icon)
        top.addSpacing(12)
        top.addWidget(text, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        copy = QPushButton("&Copy versions")
        copy.setObjectName("copyVersionsButton")
        copy.setToolTip("Copy the versions above, for a bug report")
        copy.clicked.connect(self.copy_versions)
        buttons.addButton(copy, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addLayout(top)
        layout.addWidget(buttons)

    def copy_versions(self) -> None:
        QGuiApplication.clipboard().setText(versions_text(self.versions))


def readme() -> tuple[str, Path | None]:
    """(README text in Markdown, the folder its images are relative to or None).

    The project's README.md when it is there, else the package metadata's description; a
    one-line note when neither is (an installation without metadata)."""
    if README.is_file():
        return README.read_text(encoding="utf-8"), README.parent
    try:
        meta = metadata.metadata("ftgui")
    except metadata.PackageNotFoundError:
        meta = None
    text = (meta.get_payload() or meta.get("Description") or "") if meta is not None else ""
    return (text or "ftgui's README is not part of this installation."), None


class DocumentationDialog(QDialog):
    """The README rendered in a text browser (links open in the system's browser)."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("documentationDialog")
        self.setWindowTitle("ftgui documentation")
        text, folder = readme()
        self.browser = QTextBrowser()
        self.browser.setObjectName("documentationBrowser")
        self.browser.setOpenExternalLinks(True)
        if folder is not None:
            self.browser.setSearchPaths([str(folder)])  # the README's screenshot
        self.browser.setMarkdown(text)
        fit_images(self.browser.document(), IMAGE_WIDTH)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)
        self.resize(960, 720)


def fit_images(document: QTextDocument, width: int) -> int:
    """Shrink the document's images wider than `width` pixels to that width (the README's
    screenshot is 1360 px wide); returns how many were shrunk."""
    shrunk = 0
    block = document.begin()
    while block.isValid():
        iterator = block.begin()
        while not iterator.atEnd():
            fragment = iterator.fragment()
            image = fragment.charFormat().toImageFormat()
            if image.isValid():
                natural = document.resource(QTextDocument.ResourceType.ImageResource,
                                            image.name())
                if natural is not None and natural.width() > width:
                    image.setWidth(width)
                    image.setHeight(natural.height() * width / natural.width())
                    cursor = QTextCursor(document)
                    cursor.setPosition(fragment.position())
                    cursor.setPosition(fragment.position() + fragment.length(),
                                       QTextCursor.MoveMode.KeepAnchor)
                    cursor.setCharFormat(image)
                    shrunk += 1
            iterator += 1
        block = block.next()
    return shrunk


class HelpMenu(QObject):
    """The window's Help menu: Open documentation (F1) and About ftgui. The dialogs are not modal
    and are created once, on first use (`about` / `documentation` hold them)."""

    def __init__(self, window: QMainWindow):
        super().__init__(window)
        self.window = window
        self.about: AboutDialog | None = None
        self.documentation: DocumentationDialog | None = None
        menu = window.menuBar().addMenu("&Help")
        menu.setObjectName("helpMenu")
        self.docs_action = QAction("Open &documentation", window)
        self.docs_action.setObjectName("documentationAction")
        self.docs_action.setShortcut(QKeySequence.StandardKey.HelpContents)
        self.docs_action.triggered.connect(self.show_documentation)
        self.about_action = QAction("&About ftgui", window)
        self.about_action.setObjectName("aboutAction")
        self.about_action.setMenuRole(QAction.MenuRole.AboutRole)
        self.about_action.triggered.connect(self.show_about)
        menu.addAction(self.docs_action)
        menu.addSeparator()
        menu.addAction(self.about_action)
        self.menu = menu

    def show_about(self) -> AboutDialog:
        if self.about is None:
            self.about = AboutDialog(self.window)
        self.about.show()
        self.about.raise_()
        return self.about

    def show_documentation(self) -> DocumentationDialog:
        if self.documentation is None:
            self.documentation = DocumentationDialog(self.window)
        self.documentation.show()
        self.documentation.raise_()
        return self.documentation
