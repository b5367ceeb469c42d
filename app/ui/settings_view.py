"""The settings ledger in the memory browser: every render setting — the value decided (in the chat or
by hand), what the last imported scene file holds beside it, and "to confirm" where Kelvin was unsure
of what was said — and the whole history of the one selected (what it was, when, said where, by
whom). A value can be corrected in place (double-click, type, Enter); the file's value can be adopted
in one click: both go through the ledger, journaled, and win. Thin models over lists the window hands
in; the ledger runs on the memory pool."""
from __future__ import annotations

from PySide6.QtCore import QAbstractTableModel, QModelIndex, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QPushButton, QSplitter, QTableView, QVBoxLayout,
                               QWidget)

from app.core.dates import as_read
from app.core.render_settings.parameters import format_value
from app.services.settings_ledger import question
from app.ui.markdown import stripped
from app.ui.paced import Paced

KeyRole = Qt.ItemDataRole.UserRole + 2
CURRENT_COLUMNS = ("Engine", "Setting", "Decided", "In the file", "Set", "By", "Before")
VALUE_COLUMN = 2
WIDE_ONLY_COLUMNS = (0, 4, 5, 6)  # engine, set, by, before: hidden in a narrow window
NARROW_PX = 640
RESIZE_ROWS = 50
TO_CONFIRM = QColor("#e0a040")
HISTORY_COLUMNS = ("When", "Value", "Status", "By", "Said in")
_ENGINES = {"": "", "vray": "V-Ray", "octane": "Octane", "redshift": "Redshift", "arnold": "Arnold",
            "cycles": "Cycles", "karma": "Karma", "corona": "Corona"}


def when(ts_ms: int) -> str:
    return as_read(ts_ms)  # local, as an artist reads it ("Tue 10:42"), never a UTC stamp


def who(by: str) -> str:
    """Who put a value in the ledger, in a word: you (by hand), the model, the scene, or the chat."""
    return {"artist": "you", "model": "model", "scene": "scene"}.get(by, "chat")


def engine_name(engine: str) -> str:
    return _ENGINES.get(engine, engine.capitalize())


class CurrentModel(QAbstractTableModel):
    """One row per (engine, parameter, scope) the ledger holds: the decided value (or the values to
    confirm), the file's value beside it. The Decided column is editable; an edit is asked for with
    ``set_requested`` and shows once the ledger has it."""

    set_requested = Signal(object, str)  # key (engine, parameter, scope), the value as typed

    def __init__(self, parent=None):
        super().__init__(parent)
        self.rows: list = []  # app.core.render_settings.ledger.Current
        self.narrow = False  # a narrow window: the engine goes in front of the setting's name

    def set_narrow(self, narrow: bool) -> None:
        if narrow != self.narrow:
            self.narrow = narrow
            if self.rows:
                self.dataChanged.emit(self.index(0, 1), self.index(len(self.rows) - 1, 1))

    @staticmethod
    def ordered(rows: list) -> list:
        return sorted(rows, key=lambda c: (c.entry.engine, c.entry.name or c.entry.parameter, c.entry.scope))

    def set_rows(self, rows: list) -> None:
        self.beginResetModel()
        self.rows = self.ordered(rows)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(CURRENT_COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return CURRENT_COLUMNS[section]
        return None

    def flags(self, index: QModelIndex):
        base = super().flags(index)
        return base | Qt.ItemFlag.ItemIsEditable if index.isValid() and index.column() == VALUE_COLUMN else base

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.rows):
            return None
        c = self.rows[index.row()]
        e, d, held = c.entry, c.decision, c.held
        if role == KeyRole:
            return e.key
        if role == Qt.ItemDataRole.EditRole and index.column() == VALUE_COLUMN:
            return format_value(d.value, d.unit) if d is not None else ""
        if role == Qt.ItemDataRole.ForegroundRole and c.unsure and index.column() == VALUE_COLUMN:
            return TO_CONFIRM
        if role == Qt.ItemDataRole.ToolTipRole:
            if c.unsure:
                return f"To confirm: {question(c)} Double-click to decide."
            if index.column() == 3 and held is not None:
                return f"Read from {held.note or 'a scene'} ({when(held.ts_ms)})" + (
                    " — not what was decided" if c.differs else "")
            name = f"{self.data(index)}\n" if index.column() == 1 else ""  # whole, where a narrow table elides it
            tip = name + f"changed {c.changed} time(s)" + (" · a candidate, not in the taxonomy" if e.candidate else "")
            return tip + "".join(f"\n{x.author or 'another Kelvin'} set {format_value(x.value, x.unit)} at "
                                 f"{when(x.ts_ms)} without having seen it — double-click the value to choose"
                                 for x in c.conflict)
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        p = c.previous
        name = (e.name or e.parameter).replace("_", " ") + (f" ({e.scope})" if e.scope else "")
        if self.narrow and engine_name(e.engine):
            name = f"{engine_name(e.engine)} {name}"
        if c.unsure:  # (beside a DCC the words go under the values: the setting's name keeps its width)
            decided = " or ".join(format_value(a.value, a.unit) for a in c.alternatives) + (
                "\nto confirm" if self.narrow else " — to confirm")
        else:
            decided = format_value(d.value, d.unit) if d is not None else "—"
        if c.conflict and d is not None:  # a shared project: two artists decided apart; shown as one until chosen
            decided = " or ".join([f"{decided} ({d.author})", *(f"{format_value(x.value, x.unit)} ({x.author})"
                                                               for x in c.conflict)]) + " — conflict"
        in_file = "" if held is None else format_value(held.value, held.unit) + (" ≠" if c.differs else "")
        return (engine_name(e.engine), name, decided, in_file,
                when(d.ts_ms) if d is not None else "", (d.author or who(d.by)) if d is not None else "",
                "" if p is None else format_value(p.value, p.unit))[index.column()]

    def setData(self, index: QModelIndex, value, role=Qt.ItemDataRole.EditRole) -> bool:
        if role != Qt.ItemDataRole.EditRole or not index.isValid() or index.column() != VALUE_COLUMN:
            return False
        text = str(value).strip()
        c = self.rows[index.row()]
        d = c.decision
        if text and (c.unsure or d is None or text != format_value(d.value, d.unit)):
            self.set_requested.emit(c.entry.key, text)
        return False  # the row changes when the ledger says so


class HistoryModel(QAbstractTableModel):
    """The history of one setting, oldest first, with the message each value came from."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.entries: list = []  # app.core.render_settings.ledger.Entry
        self.sources: dict[str, str] = {}  # message id → its text

    def set_entries(self, entries: list, sources: dict[str, str]) -> None:
        self.beginResetModel()
        self.entries = sorted(entries, key=lambda e: (e.ts_ms, e.order, e.id))
        self.sources = dict(sources)
        self.endResetModel()

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.entries)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(HISTORY_COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return HISTORY_COLUMNS[section]
        return None

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.entries):
            return None
        e = self.entries[index.row()]
        if e.by == "artist":
            said = "by hand" + (f": {e.note}" if e.note else "")
        elif e.by == "scene":
            said = f"read from {e.note}" if e.note else "read from a scene"
        else:
            said = self.sources.get(e.source_id, "")
        if role == Qt.ItemDataRole.ToolTipRole:
            return said[:2000]
        if role != Qt.ItemDataRole.DisplayRole:
            return None
        return (when(e.ts_ms), format_value(e.value, e.unit), e.status,
                who(e.by), stripped(said)[:240])[index.column()]  # the message's words, not its Markdown marks


class SettingsPanel(QWidget):
    """Current values on top, the selected one's history below. Emits what to do; the window does it."""

    history_wanted = Signal(object)  # key (engine, parameter, scope)
    unset_requested = Signal(object)
    set_requested = Signal(object, str)
    adopt_requested = Signal(object)  # key: take the file's value as the decision

    def __init__(self, parent=None):
        super().__init__(parent)
        self.current = CurrentModel(self)
        self.current.set_requested.connect(self.set_requested)
        self.history = HistoryModel(self)
        self.table = QTableView(objectName="currentSettings")
        self.table.setModel(self.current)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QTableView.SelectionMode.SingleSelection)
        self.table.verticalHeader().hide()
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # a word too long for its line keeps both ends
        self.table.setEditTriggers(QTableView.EditTrigger.DoubleClicked | QTableView.EditTrigger.EditKeyPressed)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Interactive)
        # fitting the columns measures at most this many rows (a big project holds thousands of settings and
        # candidates: measuring every row on each refresh held the UI thread ~300 ms, bench/ui_stall.py)
        self.table.horizontalHeader().setResizeContentsPrecision(RESIZE_ROWS)
        for col, width in enumerate((74, 150, 90, 80, 128, 44)):
            self.table.setColumnWidth(col, width)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.selectionModel().currentRowChanged.connect(self._selected)
        # the columns are fitted one at a time, the window answering between them: all seven at once
        # held the UI thread 30-50 ms when the memory browser first showed a big project (bench/ui_stall.py)
        self._fitting = Paced(self._fit_one, parent=self, name="settingsFit")
        self._fit_next = len(CURRENT_COLUMNS)
        self.log = QTableView(objectName="settingHistory")
        self.log.setModel(self.history)
        self.log.verticalHeader().hide()
        self.log.verticalHeader().setDefaultSectionSize(22)
        for col, width in enumerate((128, 80, 70, 44)):
            self.log.setColumnWidth(col, width)
        self.log.horizontalHeader().setStretchLastSection(True)
        self.title = QLabel("Select a setting to see its history", objectName="historyTitle", wordWrap=True)
        self.unset_button = QPushButton("Unset", objectName="unsetSetting", enabled=False)
        self.unset_button.setToolTip("Kelvin forgets the current value (the history stays)")
        self.unset_button.clicked.connect(self._unset)
        self.adopt_button = QPushButton("Use the file's value", objectName="adoptSetting", enabled=False)
        self.adopt_button.setToolTip("The value the last imported scene file holds becomes the decided one "
                                     "(journaled, like any correction)")
        self.adopt_button.clicked.connect(self._adopt)
        self.count = QLabel("", objectName="settingsCount", wordWrap=True)
        # the last imported scene against what was decided (kelvin scene import, Send to Kelvin in Blender)
        self.scene = QLabel("", objectName="sceneDiff", wordWrap=True, textFormat=Qt.TextFormat.PlainText)
        self.scene.hide()
        lower = QWidget()
        lower_layout = QVBoxLayout(lower)
        lower_layout.setContentsMargins(0, 4, 0, 0)
        row = QHBoxLayout()
        row.addWidget(self.title, 1)
        row.addWidget(self.adopt_button)
        row.addWidget(self.unset_button)
        lower_layout.addLayout(row)
        lower_layout.addWidget(self.log, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(lower)
        split.setSizes([300, 200])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.scene)
        layout.addWidget(split, 1)
        layout.addWidget(self.count)
        self._key = None
        self.shown_mark = None  # the project and its change mark when the settings shown were read

    def selected_key(self):
        return self._key

    def resizeEvent(self, event) -> None:
        """In a narrow window (400 px beside the DCC) the table shows what matters — the setting, what
        was decided, what the file holds — and the engine moves in front of the name; when, by whom
        and the value before are in the history below."""
        super().resizeEvent(event)
        narrow = self.width() < NARROW_PX
        if narrow != self.current.narrow:
            self.current.set_narrow(narrow)
            for col in WIDE_ONLY_COLUMNS:
                self.table.setColumnHidden(col, narrow)
            # narrow: the values take what they need and the name the rest (a long one is elided, whole in
            # its tooltip); wide: every column as wide as its contents, the last one stretched
            header = self.table.horizontalHeader()
            header.setStretchLastSection(False)  # (set again after the columns change: Qt keeps the old last section)
            header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch if narrow else QHeaderView.ResizeMode.Interactive)
            for col in (VALUE_COLUMN, 3):
                header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents if narrow
                                            else QHeaderView.ResizeMode.Interactive)
            # a long name wraps onto a second line rather than losing its end (the light's name is there)
            self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents if narrow
                                                             else QHeaderView.ResizeMode.Interactive)
            self.table.resizeColumnsToContents()
            header.setStretchLastSection(True)  # the last column shown fills the rest

    def clear(self) -> None:
        """Another project: no setting, no history, no title of the one before."""
        self._key = None
        self.shown_mark = None
        self.current.set_rows([])
        self.history.set_entries([], {})
        self.title.setText("Select a setting to see its history")
        self.unset_button.setEnabled(False)
        self.adopt_button.setEnabled(False)
        self.count.setText("")
        self.show_scene(())

    def show_current(self, rows: list) -> None:
        key = self._key
        if rows and self.current.ordered(rows) == self.current.rows:
            return  # the same settings again (each search in the memory browser brings them): nothing to redo
        self.current.set_rows(rows)
        asked = [c for c in rows if c.unsure]
        self.count.setText((f"{len(rows)} settings · double-click a value to correct it"
                            + (f" · {len(asked)} to confirm: " + " · ".join(question(c) for c in asked[:3])
                               if asked else "")) if rows
                           else "No settings yet: state one in the chat (“GI clamp 10”) or set one by hand")
        self._fit_next = 0  # names and values shown whole: the columns fitted to their contents, one a slice
        self._fitting.start()
        keys = [c.entry.key for c in self.current.rows]
        if key in keys:
            self.table.selectRow(keys.index(key))
        elif key is not None:
            self._key = None
            self.history.set_entries([], {})
            self.unset_button.setEnabled(False)
            self.adopt_button.setEnabled(False)
            self.title.setText("Select a setting to see its history")  # never the title of one that is gone

    @property
    def fitting(self) -> bool:
        """The columns are still being fitted (on the event loop's next turns)."""
        return self._fitting.busy

    def _fit_one(self) -> bool:
        col, self._fit_next = self._fit_next, self._fit_next + 1
        if col < len(CURRENT_COLUMNS) and not self.table.isColumnHidden(col):
            self.table.resizeColumnToContents(col)
        return self._fit_next < len(CURRENT_COLUMNS)

    def show_scene(self, lines: tuple[str, ...]) -> None:
        """A line per setting where the scene differs from what was decided (hidden: no scene)."""
        self.scene.setText("\n".join(("⚠ " + lines[0], *("  " + x for x in lines[1:]))) if len(lines) > 1
                           else ("✓ " + lines[0]) if lines else "")
        self.scene.setProperty("differs", len(lines) > 1)
        self.scene.style().polish(self.scene)
        self.scene.setVisible(bool(lines))

    def show_history(self, key, entries: list, sources: dict) -> None:
        if key != self._key:
            return
        self.history.set_entries(entries, sources)
        self.log.resizeColumnsToContents()
        self.log.horizontalHeader().setStretchLastSection(True)

    def _selected(self, current: QModelIndex, _previous: QModelIndex) -> None:
        key = self.current.data(current, KeyRole) if current.isValid() else None
        self._key = key
        self.unset_button.setEnabled(key is not None)
        c = self.current.rows[current.row()] if key is not None else None
        self.adopt_button.setEnabled(c is not None and c.held is not None and (c.decision is None or c.differs
                                                                               or c.unsure))
        if c is not None:
            scope = f" ({key[2]})" if key[2] else ""
            self.title.setText(f"History of {engine_name(key[0])} {(c.entry.name or key[1]).replace('_', ' ')}{scope}"
                               .strip())
            self.history_wanted.emit(key)

    def _unset(self) -> None:
        if self._key is not None:
            self.unset_requested.emit(self._key)

    def _adopt(self) -> None:
        if self._key is not None:
            self.adopt_requested.emit(self._key)
