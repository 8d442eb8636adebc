"""Help → About ftgui (the versions a bug report needs) and Help → Documentation (the docs).

Documentation is shown inside ftgui, rendered from Markdown, so it works without a network: the
pages of the project's `docs/` folder, listed in the order of `mkdocs.yml`'s nav, when ftgui runs
from a source checkout or an editable install (both lie beside the ftgui package, as README.md
does); else the README text every installed package carries in its metadata (pyproject's
`readme`), the front page alone.
"""

from __future__ import annotations

import html
import re
from importlib import metadata
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QUrl
from PySide6.QtGui import (
    QAction,
    QDesktopServices,
    QGuiApplication,
    QKeySequence,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QMainWindow,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from ftgui.qt.window.app_icon import app_icon
from ftgui.versions import stack_versions

IMAGE_WIDTH = 880  # pixels: the screenshots of the pages, shrunk to the documentation window
ROOT = Path(__file__).resolve().parents[3]  # the folder that holds the ftgui package
README = ROOT / "README.md"
DOCS = ROOT / "docs"  # the documentation site's Markdown pages
MKDOCS = ROOT / "mkdocs.yml"  # its nav: the pages' titles and order
NAV_ENTRY = re.compile(r"^\s*-\s+(?P<title>[^:\n]+?):\s+(?P<page>[\w./-]+\.md)\s*$", re.M)


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


def doc_pages(docs: Path | None = None, mkdocs: Path | None = None) -> list[tuple[str, Path]]:
    """The documentation pages as (title, path of the Markdown file), in the order of the nav
    in `mkdocs` (its `- Title: page.md` entries, nested sections flattened); entries whose file
    is not in `docs` are left out. Empty when either is missing (an installed wheel). Default:
    the project's `DOCS` and `MKDOCS`."""
    docs, mkdocs = docs or DOCS, mkdocs or MKDOCS
    if not (docs.is_dir() and mkdocs.is_file()):
        return []
    nav = mkdocs.read_text(encoding="utf-8").partition("\nnav:")[2]
    pages = [(m["title"].strip(), docs / m["page"]) for m in NAV_ENTRY.finditer(nav)]
    return [(title, path) for title, path in pages if path.is_file()]


class DocumentationDialog(QDialog):
    """The documentation pages: their titles in a list (`documentationPages`) beside a text
    browser (`documentationBrowser`) that renders the chosen page's Markdown, follows links
    between pages in place and opens web links in the system's browser. Without `docs/`, the
    README alone, and no list."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("documentationDialog")
        self.setWindowTitle("ftgui documentation")
        self.pages = doc_pages()
        self.browser = QTextBrowser()
        self.browser.setObjectName("documentationBrowser")
        self.browser.setOpenLinks(False)  # `follow` decides: a page here, anything else outside
        self.browser.anchorClicked.connect(self.follow)
        self.browser.sourceChanged.connect(self._page_shown)
        self.page_list = QListWidget()
        self.page_list.setObjectName("documentationPages")
        self.page_list.addItems([title for title, _ in self.pages])
        self.page_list.currentRowChanged.connect(self.show_page)
        splitter = QSplitter()
        splitter.addWidget(self.page_list)
        splitter.addWidget(self.browser)
        splitter.setStretchFactor(1, 1)
        splitter.setSizes([200, 760])
        if self.pages:
            self.page_list.setCurrentRow(0)
        else:
            self.page_list.hide()
            text, folder = readme()
            if folder is not None:
                self.browser.setSearchPaths([str(folder)])  # the README's screenshot
            self.browser.setMarkdown(text)
            fit_images(self.browser.document(), IMAGE_WIDTH)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.addWidget(splitter, 1)
        layout.addWidget(buttons)
        self.resize(960, 720)

    def show_page(self, row: int) -> None:
        """Render page `row` of `pages` (its images and links relative to its file)."""
        if 0 <= row < len(self.pages):
            url = QUrl.fromLocalFile(str(self.pages[row][1]))
            if self.browser.source() != url:
                self.browser.setSource(url, QTextDocument.ResourceType.MarkdownResource)

    def follow(self, url: QUrl) -> None:
        """A clicked link: another page of the docs (a local `.md` file) or an anchor of this
        one is shown here; a web address or another file (an example module, an image) opens
        in the system's browser or viewer."""
        if not url.scheme() and not url.path() and url.fragment():
            self.browser.scrollToAnchor(url.fragment())
            return
        target = self.browser.source().resolved(url) if url.isRelative() else url
        if target.isLocalFile() and target.toLocalFile().endswith(".md"):
            self.browser.setSource(target, QTextDocument.ResourceType.MarkdownResource)
        else:
            QDesktopServices.openUrl(target)

    def _page_shown(self, url: QUrl) -> None:
        fit_images(self.browser.document(), IMAGE_WIDTH)
        shown = Path(url.toLocalFile()).resolve() if url.isLocalFile() else None
        for row, (_, path) in enumerate(self.pages):
            if path.resolve() == shown and self.page_list.currentRow() != row:
                self.page_list.blockSignals(True)  # a link followed: the list follows it
                self.page_list.setCurrentRow(row)
                self.page_list.blockSignals(False)


def fit_images(document: QTextDocument, width: int) -> int:
    """Shrink the document's images wider than `width` pixels to that width (the README's
    screenshots are 1360 px wide); returns how many were shrunk."""
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
        return self._show("about", AboutDialog)

    def show_documentation(self) -> DocumentationDialog:
        return self._show("documentation", DocumentationDialog)

    def _show(self, name: str, dialog_class):
        """Show and raise the dialog kept in attribute `name`, made by `dialog_class(window)`
        the first time."""
        dialog = getattr(self, name)
        if dialog is None:
            dialog = dialog_class(self.window)
            setattr(self, name, dialog)
        dialog.show()
        dialog.raise_()
        return dialog
