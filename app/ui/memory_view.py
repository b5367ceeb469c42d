"""The memory browser: every message of the current project, newest first, searchable as you type
(hybrid search) and filtered by domain, type, engine and date; the settings ledger beside it. It
always shows the window's current project (the header's switcher): a switch empties it at once,
and rows that arrive for an earlier project or query are dropped (:attr:`MessagesModel.generation`).

The table model holds message ids only and fetches rows a page at a time on the memory pool, so
100k messages cost a list of ids, not 100k rows; a row not fetched yet shows "…" until its page
arrives. A message is edited in place (double-click or F2; Enter keeps, Shift+Enter breaks the
line, Esc leaves it) and deleted with Delete; both can be undone (Ctrl+Z or the Undo button) —
the view keeps what was there and asks the window to put it back, through the journal."""
from __future__ import annotations

from datetime import datetime, time

from html import escape

from PySide6.QtCore import QAbstractTableModel, QDate, QEvent, QItemSelectionModel, QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QPalette, QShortcut, QTextDocument
from PySide6.QtWidgets import (QApplication, QComboBox, QDateEdit, QHBoxLayout, QHeaderView, QLabel, QLineEdit,
                               QPlainTextEdit, QStyle, QStyleOptionViewItem,
                               QPushButton, QSplitter, QStyledItemDelegate, QTableView, QTabWidget, QTextBrowser,
                               QVBoxLayout, QWidget)

from app.core.dates import as_read
from app.core.highlight import spans
from app.ui.flow_layout import FlowLayout
from app.ui.markdown import render, stripped
from app.ui.settings_view import SettingsPanel
from app.ui.words import reply_end

PAGE = 100
SEARCH_MS = 250
IdRole = Qt.ItemDataRole.UserRole + 1
MarkedRole = Qt.ItemDataRole.UserRole + 3  # the preview as HTML with the matched words marked ("" when no search)
PREVIEW_CHARS = 300
COLUMNS = ("When", "Who", "Domain", "Engine", "Message")
DOMAINS = ("lighting", "shading", "camera", "optimization", "geometry", "texturing", "compositing", "general")
TYPES = ("setting", "instruction", "critique", "logic", "dialogue")
ENGINES = ("octane", "redshift", "arnold", "cycles", "vray", "karma", "corona")
DATES = (("any time", None), ("today", 0), ("since yesterday", 1), ("last 7 days", 7), ("last 30 days", 30),
         ("dates …", "range"))
TEXT_COLUMN = len(COLUMNS) - 1
PREVIEW_CSS = ".about { color: #9aa0aa; font-size: 9pt; } pre { background-color: #15171a; } " \
              "table { border-color: #3a3f47; }"
NARROW_TABLE_PX = 620  # below this the table shows when, who and the message only
NARROW_HIDDEN = (2, 3)  # domain, engine
UNDO_KEPT = 20


def marked(text: str, query: str) -> str:
    """``text`` as HTML with the words the search matched in bold and the accent colour."""
    out, at = [], 0
    for start, end in spans(text, query):
        out += [escape(text[at:start]), f'<b style="color:#e0914f">{escape(text[start:end])}</b>']
        at = end
    return "".join(out) + escape(text[at:]) if out else ""


def shown_text(m) -> str:
    """A message in the list: readable words, not Markdown's marks; a stopped reply's end in words."""
    text, end = reply_end(m.text) if m.status in ("cancelled", "cut", "failed") else (m.text, "")
    return stripped(text) + (f" ({end})" if end else "")


def day_start_ms(day: QDate) -> int:
    return int(datetime.combine(day.toPython(), time.min).astimezone().timestamp() * 1000)


class MessagesModel(QAbstractTableModel):
    """Rows are message ids; a row's message comes from the cache, or is asked for with ``wanted``
    (the page of ids it belongs to) and filled in by :meth:`fill`."""

    wanted = Signal(list)
    edit_requested = Signal(object, str)  # the message as it is, the new text

    def __init__(self, parent=None):
        super().__init__(parent)
        self.ids: list[str] = []
        self.cache: dict[str, object] = {}
        self._asked: set[int] = set()
        self.generation = 0  # a new list (another project, query or filter) makes earlier pages stale
        self.searched = ""  # the search whose matches the previews mark

    def set_ids(self, ids: list[str], known: dict | None = None, searched: str = "") -> None:
        self.beginResetModel()
        self.generation += 1
        self.searched = searched
        self.ids = list(ids)
        self.cache = dict(known or {})
        self._asked = set()
        self.endResetModel()

    def fill(self, messages: dict, generation: int | None = None) -> None:
        """Rows of a page asked for (``generation``: the list's when it was asked; a page of an earlier
        list is dropped), or a message just edited."""
        if generation is not None and generation != self.generation:
            return
        self.cache.update(messages)
        # the rows of the pages asked for, not a pass over every id (10-30 ms at 100k, on the UI thread)
        rows = [i for page in self._asked for i in range(page * PAGE, min((page + 1) * PAGE, len(self.ids)))
                if self.ids[i] in messages]
        if len(rows) < len(messages):  # not (only) from a page asked for: an edit, or an older list
            rows = [i for i, mid in enumerate(self.ids) if mid in messages]
        if rows:
            self.dataChanged.emit(self.index(min(rows), 0), self.index(max(rows), len(COLUMNS) - 1))

    def remove_ids(self, ids) -> None:
        gone = set(ids)
        for row in sorted((i for i, mid in enumerate(self.ids) if mid in gone), reverse=True):
            self.beginRemoveRows(QModelIndex(), row, row)
            del self.ids[row]
            self.endRemoveRows()
        self._asked = set()  # pages moved: ask again for what is missing
        for mid in gone:
            self.cache.pop(mid, None)

    def row_of(self, message_id: str) -> int:
        try:
            return self.ids.index(message_id)
        except ValueError:
            return -1

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.ids)

    def columnCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section, orientation, role=Qt.ItemDataRole.DisplayRole):
        if role == Qt.ItemDataRole.DisplayRole and orientation == Qt.Orientation.Horizontal:
            return COLUMNS[section]
        return None

    def flags(self, index: QModelIndex):
        base = super().flags(index)
        if index.isValid() and index.column() == TEXT_COLUMN and index.row() < len(self.ids) \
                and self.ids[index.row()] in self.cache:
            return base | Qt.ItemFlag.ItemIsEditable
        return base

    def setData(self, index: QModelIndex, value, role=Qt.ItemDataRole.EditRole) -> bool:
        """An edit is asked for with ``edit_requested``; the row shows it once it is stored."""
        if role != Qt.ItemDataRole.EditRole or not index.isValid() or index.column() != TEXT_COLUMN:
            return False
        m = self.cache.get(self.ids[index.row()])
        text = str(value)
        if m is not None and text.strip() and text != m.text:
            self.edit_requested.emit(m, text)
        return False

    def data(self, index: QModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.ids):
            return None
        mid = self.ids[index.row()]
        if role == IdRole:
            return mid
        if role == MarkedRole:
            m = self.cache.get(mid)
            return marked(shown_text(m)[:PREVIEW_CHARS], self.searched) if m is not None and self.searched else ""
        if role == Qt.ItemDataRole.EditRole and index.column() == TEXT_COLUMN:
            m = self.cache.get(mid)
            return m.text if m is not None else None
        if role not in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
            return None
        m = self.cache.get(mid)
        if m is None:
            page = index.row() // PAGE
            if page not in self._asked:
                self._asked.add(page)
                self.wanted.emit(self.ids[page * PAGE:(page + 1) * PAGE])
            return "…"
        if role == Qt.ItemDataRole.ToolTipRole:  # what a narrow table leaves out, and the whole text
            about = " · ".join(x for x in (m.tags.domain, m.tags.engine) if x)
            return f"<p>{escape(about)}</p><p>{escape(shown_text(m)[:1200])}</p>"  # rich text: it wraps
        col = index.column()
        if col == 0:
            return as_read(m.ts_ms)  # "Tue 10:42", "yesterday 18:05": never an ISO stamp
        if col == 1:
            return "You" if m.role == "user" else ("Kelvin" if m.role == "assistant" else m.role)
        if col == 2:
            return m.tags.domain
        if col == 3:
            return m.tags.engine or ""
        return shown_text(m)[:PREVIEW_CHARS]


class _TextEditor(QPlainTextEdit):
    """The in-place editor of a message: Enter keeps the edit, Shift+Enter breaks the line."""

    def __init__(self, parent, delegate):
        super().__init__(parent)
        self._delegate = delegate

    def keyPressEvent(self, event) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self._delegate.commitData.emit(self)
            self._delegate.closeEditor.emit(self)
            return
        super().keyPressEvent(event)


class MessageDelegate(QStyledItemDelegate):
    """Edits a message's whole text (not the one-line preview) in a taller box, and shows the words
    a search matched in the preview (bold, in the accent colour)."""

    def paint(self, painter, option, index) -> None:
        marked = index.data(MarkedRole) if index.column() == TEXT_COLUMN else None
        if not marked:
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""  # the background, selection and focus as usual; the text drawn below
        style = opt.widget.style() if opt.widget else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        doc = QTextDocument()
        doc.setDefaultFont(opt.font)
        doc.setDocumentMargin(0)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        colour = opt.palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text).name()
        doc.setHtml(f'<span style="color:{colour}; white-space:pre">{marked}</span>')
        text_rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, opt.widget)
        painter.save()
        painter.translate(text_rect.left(), text_rect.top() + max(0, (text_rect.height() - doc.size().height()) / 2))
        painter.setClipRect(0, 0, text_rect.width(), text_rect.height())
        doc.drawContents(painter)
        painter.restore()

    def createEditor(self, parent, option, index):
        return _TextEditor(parent, self) if index.column() == TEXT_COLUMN else super().createEditor(parent, option, index)

    def setEditorData(self, editor, index) -> None:
        if isinstance(editor, _TextEditor):
            editor.setPlainText(index.data(Qt.ItemDataRole.EditRole) or "")
        else:
            super().setEditorData(editor, index)

    def setModelData(self, editor, model, index) -> None:
        if isinstance(editor, _TextEditor):
            model.setData(index, editor.toPlainText(), Qt.ItemDataRole.EditRole)
        else:
            super().setModelData(editor, model, index)

    def updateEditorGeometry(self, editor, option, index) -> None:
        rect = option.rect
        if isinstance(editor, _TextEditor):
            rect.setHeight(max(rect.height(), 110))
        editor.setGeometry(rect)


class MemoryView(QWidget):
    """Messages and settings, as two tabs. Emits what to look up or change; the window runs it on
    the memory pool and hands the results back."""

    query = Signal(str, object)  # text ("" = list everything), {"project", "domain", "type", "engine", "since_ms", "until_ms"}
    edit_requested = Signal(object, str)  # the message as it was, its new text
    delete_requested = Signal(list)  # the messages as they were
    undo_requested = Signal(object)  # ("edit", old message) or ("delete", [messages])

    def __init__(self, parent=None):
        super().__init__(parent)
        self.search = QLineEdit(objectName="memorySearch", placeholderText="Search this project's memory …  (Ctrl+K)")
        self.search.setClearButtonEnabled(True)
        self.filters = {}
        bar = QHBoxLayout()
        bar.addWidget(self.search, 1)
        filters = FlowLayout()  # one line at full width, wrapping in a sidebar
        for key, values in (("domain", DOMAINS), ("type", TYPES), ("engine", ENGINES)):
            box = QComboBox(objectName=f"filter_{key}")
            box.addItem(f"any {key}", None)
            for v in values:
                box.addItem(v, v)
            box.activated.connect(self._changed)
            self.filters[key] = box
            filters.addWidget(box)
        self.dates = QComboBox(objectName="filter_dates")
        for label, value in DATES:
            self.dates.addItem(label, value)
        self.dates.activated.connect(self._dates_picked)
        today = QDate.currentDate()
        self.date_from = QDateEdit(today.addDays(-7), objectName="dateFrom", calendarPopup=True, displayFormat="d MMM yyyy")
        self.date_to = QDateEdit(today, objectName="dateTo", calendarPopup=True, displayFormat="d MMM yyyy")
        for edit in (self.date_from, self.date_to):
            edit.dateChanged.connect(self._changed)
            edit.hide()
        filters.addWidget(self.dates)
        filters.addWidget(self.date_from)
        filters.addWidget(self.date_to)

        self.model = MessagesModel(self)
        self.model.edit_requested.connect(self.edit_requested)
        self.table = QTableView(objectName="messages")
        self.table.setModel(self.model)
        self.table.setItemDelegate(MessageDelegate(self.table))
        self.table.setEditTriggers(QTableView.EditTrigger.DoubleClicked | QTableView.EditTrigger.EditKeyPressed)
        self.table.setSelectionBehavior(QTableView.SelectionBehavior.SelectRows)
        self.table.verticalHeader().hide()
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()  # fixed widths: sizing to contents would read every row
        when = self.table.fontMetrics().horizontalAdvance("yesterday 00:00") + 18  # the longest "when" it shows
        for col, width in enumerate((when, 56, 96, 74)):
            self.table.setColumnWidth(col, width)
        header.setSectionResizeMode(TEXT_COLUMN, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setDefaultSectionSize(22)
        self.table.installEventFilter(self)
        self.table.selectionModel().currentRowChanged.connect(self._show_preview)
        self.model.dataChanged.connect(self._show_preview)  # an edit, or the page of the row just arrived
        self.model.modelReset.connect(self._show_preview)
        self.count = QLabel("", objectName="memoryCount", wordWrap=True)
        self.delete_button = QPushButton("Delete", objectName="deleteMessage")
        self.delete_button.setToolTip("Delete the selected messages (Delete); Undo puts them back")
        self.delete_button.clicked.connect(self.delete_selected)
        self.undo_label = QLabel("", objectName="undoLabel", wordWrap=True)
        self.undo_button = QPushButton("Undo", objectName="undo", enabled=False)
        self.undo_button.setToolTip("Undo the last edit or delete (Ctrl+Z)")
        self.undo_button.clicked.connect(self.undo)
        foot = QHBoxLayout()
        foot.addWidget(self.count, 1)
        foot.addWidget(self.undo_label)
        foot.addWidget(self.undo_button)
        foot.addWidget(self.delete_button)
        # the selected message, whole and rendered, under the list
        self.preview = QTextBrowser(objectName="messagePreview")
        self.preview.setOpenLinks(False)
        self.preview.document().setDefaultStyleSheet(PREVIEW_CSS)
        self.preview.setPlaceholderText("Select a message to read it whole here")
        split = QSplitter(Qt.Orientation.Vertical, objectName="messageSplit")
        split.addWidget(self.table)
        split.addWidget(self.preview)
        split.setSizes([360, 160])
        split.setChildrenCollapsible(False)
        messages = QWidget()
        inner = QVBoxLayout(messages)
        inner.setContentsMargins(0, 4, 0, 0)
        inner.addLayout(filters)
        inner.addWidget(split, 1)
        inner.addLayout(foot)

        self.settings = SettingsPanel()
        self.pages = QTabWidget(objectName="memoryPages")
        self.pages.addTab(messages, "Messages")
        self.pages.addTab(self.settings, "Settings")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addLayout(bar)
        layout.addWidget(self.pages, 1)
        self._debounce = QTimer(self, singleShot=True, interval=SEARCH_MS, timeout=self._changed)
        self.search.textChanged.connect(lambda _: self._debounce.start())
        QShortcut(QKeySequence.StandardKey.Undo, self, activated=self.undo,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self._undo: list[tuple[str, object]] = []

    # ---- filters -----------------------------------------------------------------------------------
    def clear(self, why: str = "") -> None:
        """Nothing listed (another project is on its way): no row of the one before stays."""
        self.model.set_ids([])
        self.count.setText(why)
        self.settings.clear()

    def filter_values(self) -> dict:
        values = {k: box.currentData() for k, box in self.filters.items()}
        span = self.dates.currentData()
        today = QDate.currentDate()
        if span == "range":
            start, end = sorted((self.date_from.date(), self.date_to.date()), key=lambda d: d.toJulianDay())
            values["since_ms"], values["until_ms"] = day_start_ms(start), day_start_ms(end.addDays(1)) - 1
        elif span is not None:
            values["since_ms"] = day_start_ms(today.addDays(-int(span)))
        return values

    def _dates_picked(self, *_) -> None:
        custom = self.dates.currentData() == "range"
        self.date_from.setVisible(custom)
        self.date_to.setVisible(custom)
        self._changed()

    def _changed(self, *_) -> None:
        self._debounce.stop()
        self.query.emit(self.search.text().strip(), self.filter_values())

    def refresh(self) -> None:
        self._changed()

    def stop(self) -> None:
        """The window closes: a search typed (or cleared by a project switch) a moment ago is not run."""
        self._debounce.stop()

    def show_results(self, ids: list[str], known: dict, searched: str) -> None:
        # a list read again (a write here or elsewhere) keeps the rows the artist selected, by id: a
        # Delete pressed a moment later deletes what is selected on screen, not nothing
        current = self.table.currentIndex()
        current_id = self.model.ids[current.row()] if current.isValid() and current.row() < len(self.model.ids) else None
        chosen = {self.model.ids[i.row()] for i in self.table.selectionModel().selectedRows()
                  if i.row() < len(self.model.ids)}
        kept = {mid: m for mid, m in self.model.cache.items() if mid in chosen}
        self.model.set_ids(ids, {**kept, **known}, searched)
        if chosen:
            selection = self.table.selectionModel()
            place = {mid: row for row, mid in enumerate(self.model.ids) if mid in chosen}
            for row in place.values():
                selection.select(self.model.index(row, 0), QItemSelectionModel.SelectionFlag.Select
                                 | QItemSelectionModel.SelectionFlag.Rows)
            if current_id in place:
                selection.setCurrentIndex(self.model.index(place[current_id], TEXT_COLUMN),
                                          QItemSelectionModel.SelectionFlag.NoUpdate)
        if searched:
            what = (f"{len(ids)} match{'es' if len(ids) != 1 else ''} for “{searched}”, best first" if ids
                    else f"Nothing matches “{searched}”")
        else:
            what = f"{len(ids)} messages, newest first"
        self.count.setText(what)

    # ---- edit, delete, undo ----------------------------------------------------------------------------
    def resizeEvent(self, event) -> None:
        """In a narrow window (a sidebar) the domain and engine columns step aside for the message
        itself; the filters above still say them, and each row's tooltip holds everything."""
        super().resizeEvent(event)
        narrow = self.width() < NARROW_TABLE_PX
        for col in NARROW_HIDDEN:
            self.table.setColumnHidden(col, narrow)

    def eventFilter(self, obj, event) -> bool:
        if obj is self.table and event.type() == QEvent.Type.KeyPress and event.key() == Qt.Key.Key_Delete \
                and self.table.state() != QTableView.State.EditingState:
            self.delete_selected()
            return True
        return super().eventFilter(obj, event)

    def _show_preview(self, *_args) -> None:
        """The current row's message, whole: who, when, where it belongs, and its text rendered."""
        index = self.table.currentIndex()
        m = self.model.cache.get(self.model.ids[index.row()]) if index.isValid() and index.row() < len(self.model.ids) \
            else None
        if m is None:
            self.preview.clear()
            return
        who = "You" if m.role == "user" else ("Kelvin" if m.role == "assistant" else m.role)
        about = " · ".join(x for x in (as_read(m.ts_ms), who, m.tags.domain, m.tags.engine) if x)
        text, end = reply_end(m.text) if m.status in ("cancelled", "cut", "failed") else (m.text, "")
        body, _ = render(text + (f"\n\n*({end})*" if end else ""))
        self.preview.setHtml(f'<p class="about">{escape(about)}</p>{body}')

    def selected_messages(self) -> list:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [self.model.cache[self.model.ids[r]] for r in rows if self.model.ids[r] in self.model.cache]

    def delete_selected(self) -> None:
        chosen = self.selected_messages()
        if chosen:
            self.delete_requested.emit(chosen)

    def edited(self, before, after) -> None:
        """The window stored an edit: show it, and keep the old text for Undo."""
        self.model.fill({after.id: after})
        self._push(("edit", before), "Edited 1 message.")

    def deleted(self, messages: list) -> None:
        self.model.remove_ids([m.id for m in messages])
        n = len(messages)
        self._push(("delete", messages), f"Deleted {n} message{'s' if n != 1 else ''}.")
        self.count.setText(f"{len(self.model.ids)} messages")

    def undone(self, what: str) -> None:
        self.undo_label.setText(what)
        self.undo_button.setEnabled(bool(self._undo))
        self.refresh()

    def _push(self, action, said: str) -> None:
        self._undo.append(action)
        del self._undo[:-UNDO_KEPT]
        self.undo_label.setText(said)
        self.undo_button.setEnabled(True)

    def undo(self) -> None:
        if self._undo:
            self.undo_button.setEnabled(False)
            self.undo_requested.emit(self._undo.pop())
