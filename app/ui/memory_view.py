"""The memory browser: every stored message, newest first, searchable as you type (hybrid search)
and filtered by domain, type and engine. The table model holds message ids only and fetches rows
a page at a time on the memory pool, so 100k messages cost a list of ids, not 100k rows; a row
not fetched yet shows "…" until its page arrives."""
from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QHeaderView, QLabel, QLineEdit, QTableView, QVBoxLayout, QWidget

PAGE = 100
SEARCH_MS = 250
IdRole = Qt.ItemDataRole.UserRole + 1
COLUMNS = ("When", "Who", "Domain", "Engine", "Message")
DOMAINS = ("lighting", "shading", "camera", "optimization", "geometry", "texturing", "compositing", "general")
TYPES = ("setting", "instruction", "critique", "logic", "dialogue")
ENGINES = ("octane", "redshift", "arnold", "cycles", "vray", "karma", "corona")


class MessagesModel(QAbstractTableModel):
    """Rows are message ids; a row's message comes from the cache, or is asked for with ``wanted``
    (the page of ids it belongs to) and filled in by :meth:`fill`."""

    wanted = Signal(list)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.ids: list[str] = []
        self.cache: dict[str, object] = {}
        self._asked: set[int] = set()

    def set_ids(self, ids: list[str], known: dict | None = None) -> None:
        self.beginResetModel()
        self.ids = list(ids)
        self.cache = dict(known or {})
        self._asked = set()
        self.endResetModel()

    def fill(self, messages: dict) -> None:
        self.cache.update(messages)
        rows = [i for i, mid in enumerate(self.ids) if mid in messages]
        if rows:
            self.dataChanged.emit(self.index(min(rows), 0), self.index(max(rows), len(COLUMNS) - 1))

    def rowCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(self.ids)

    def columnCount(self, parent=QModelIndex()) -> int:  # noqa: N802
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):  # noqa: N802
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.ids):
            return None
        mid = self.ids[index.row()]
        if role == IdRole:
            return mid
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        m = self.cache.get(mid)
        if m is None:
            page = index.row() // PAGE
            if page not in self._asked:
                self._asked.add(page)
                self.wanted.emit(self.ids[page * PAGE:(page + 1) * PAGE])
            return "…"
        if role == Qt.ItemDataRole.ToolTipRole:
            return m.text[:2000]
        col = index.column()
        if col == 0:
            return m.timestamp[:16].replace("T", " ")
        if col == 1:
            return "You" if m.role == "user" else ("Kelvin" if m.role == "assistant" else m.role)
        if col == 2:
            return m.tags.domain
        if col == 3:
            return m.tags.engine or ""
        return " ".join(m.text.split())[:300]


class MemoryView(QWidget):
    """Search box and filters over the table. Emits what to look up; the window runs it."""

    query = Signal(str, object)  # text ("" = list everything), filter values {"domain", "type", "engine"}

    def __init__(self, parent=None):
        super().__init__(parent)
        self.search = QLineEdit(objectName="memorySearch", placeholderText="Search everything Kelvin remembers …  (Ctrl+K)")
        self.search.setClearButtonEnabled(True)
        self.filters = {}
        bar = QHBoxLayout()
        bar.addWidget(self.search, 1)
        for key, values in (("domain", DOMAINS), ("type", TYPES), ("engine", ENGINES)):
            box = QComboBox(objectName=f"filter_{key}")
            box.addItem(f"any {key}", None)
            for v in values:
                box.addItem(v, v)
            box.activated.connect(self._changed)
            self.filters[key] = box
            bar.addWidget(box)
        self.model = MessagesModel(self)
        self.table = QTableView(objectName="messages")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()  # fixed widths: sizing to contents would read every row
        for col, width in enumerate((132, 56, 96, 74)):
            self.table.setColumnWidth(col, width)
        header.setSectionResizeMode(len(COLUMNS) - 1, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.count = QLabel("", objectName="memoryCount")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addLayout(bar)
        layout.addWidget(self.table, 1)
        layout.addWidget(self.count)
        self._debounce = QTimer(self, singleShot=True, interval=SEARCH_MS, timeout=self._changed)
        self.search.textChanged.connect(lambda _: self._debounce.start())

    def filter_values(self) -> dict:
        return {k: box.currentData() for k, box in self.filters.items()}

    def _changed(self, *_) -> None:
        self._debounce.stop()
        self.query.emit(self.search.text().strip(), self.filter_values())

    def show_results(self, ids: list[str], known: dict, searched: str) -> None:
        self.model.set_ids(ids, known)
        what = f"{len(ids)} best matches for “{searched}”" if searched else f"{len(ids)} messages, newest first"
        self.count.setText(what)
