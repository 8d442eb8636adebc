"""The Qt boilerplate every ftgui table shares: rows under a fixed tuple of column headers."""

from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QStyle, QTableView

from ftgui.qt import theme


class RowsModel(QAbstractTableModel):
    """A flat table of `self.rows` under the headers `columns` (set by the subclass)."""

    columns: tuple[str, ...] = ()

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list = []

    def set_rows(self, rows: list) -> None:
        """Show `rows` in place of the rows shown."""
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: B008 (Qt's signature)
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return self.columns[section]
        return None

    def reset_rows(self, rows: list) -> None:
        """Show `rows` instead of the current ones; the views reset (selection, scroll)."""
        self.beginResetModel()
        self.rows = rows
        self.endResetModel()


def set_up_table(view: QTableView, name: str, model, multi: bool = False,
                 stripes: bool = False, row_padding: int | None = None) -> None:
    """The look every ftgui table shares: `objectName` `name`, whole-row selection (one row, or
    several with `multi`), no row numbers, columns fitted to their contents, the last one
    stretched. Rows are as high as the theme's font plus `row_padding` pixels (default: as Qt
    sizes them, the style's height or the font plus 4, whichever is more), again after each
    change of the theme's scale."""
    view.setObjectName(name)
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection if multi
                          else QAbstractItemView.SelectionMode.SingleSelection)
    view.setAlternatingRowColors(stripes)
    rows = view.verticalHeader()
    rows.setVisible(False)

    if row_padding is None:
        least = rows.style().pixelMetric(QStyle.PixelMetric.PM_HeaderDefaultSectionSizeVertical,
                                         None, rows)
        padding = 4
    else:
        least, padding = 0, row_padding

    def fit_rows(_scale=None) -> None:
        # The theme's font, not the view's: a view learns of a new application font later.
        rows.setDefaultSectionSize(max(least, QFontMetrics(theme.font()).height() + padding))

    fit_rows()
    theme.follow_scale(view, fit_rows)
    header = view.horizontalHeader()
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    # the last column takes the room left (Qt's stretched last section keeps at least 100 px,
    # which makes a table that fits scroll sideways at 1280 px)
    header.setSectionResizeMode(model.columnCount() - 1, QHeaderView.ResizeMode.Stretch)



class MenuTable(QTableView):
    """A table view of one `RowsModel` (`model_`, made from the class's `model_class`) with
    the look of `set_up_table` (`objectName` `object_name`, `stripes`) and a right-click menu
    per row: the subclass's `row_menu(row number)`, a QMenu."""

    model_class: type[RowsModel] = RowsModel
    object_name = ""
    stripes = False

    def __init__(self, parent=None):
        super().__init__(parent)
        self.model_ = self.model_class(self)
        set_up_table(self, self.object_name, self.model_, stripes=self.stripes)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._open_row_menu)

    def row_menu(self, number: int):
        raise NotImplementedError

    def _open_row_menu(self, position) -> None:
        index = self.indexAt(position)
        if index.isValid():  # not below the rows
            self.row_menu(index.row()).exec(self.viewport().mapToGlobal(position))
