"""Every key Kelvin's window answers to, in one list, and the sheet that shows it (F1, or ? outside
a text field). The window binds its shortcuts from :data:`WINDOW_KEYS`; the keys the views handle
themselves (Enter in the message box, F2 in the memory list …) are listed in :data:`VIEW_KEYS`, so
the sheet says all of them. As in the DCC apps, Tab and Shift+Tab move between the window's parts;
the focused one always shows an orange ring."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
)

# (keys, what they do, the window's action) — bound by the window, window-wide
WINDOW_KEYS = (
    ("Ctrl+1", "Chat, with the cursor in the message box", "chat"),
    ("Ctrl+2", "Memory, with the cursor in its search field", "memory"),
    ("Ctrl+K", "Search the memory (the same as Ctrl+2)", "search"),
    ("Ctrl+3", "GPU: what the VRAM guard sees", "gpu"),
    ("Ctrl+4", "Brief: today's, the archive, End of day", "brief"),
    ("Ctrl+P", "Switch project (or start a new one)", "projects"),
    ("F1", "This list of keys", "keys"),
    ("?", "This list of keys (outside a text field)", "keys"),
    ("Ctrl+Q", "Quit Kelvin (your turns are saved first)", "quit"),
)
# handled where they apply
VIEW_KEYS = (
    ("Tab", "The next part of the window (Shift+Tab: the one before)"),
    ("Enter", "Send the message"),
    ("Shift+Enter", "A new line in the message"),
    ("Ctrl+Tab", "A tab character in the message"),
    ("Esc", "Stop the reply (in the chat); what was written is kept"),
    ("F2", "Edit the selected message (Memory; double-click too)"),
    ("Delete", "Delete the selected messages (Memory)"),
    ("Ctrl+Z", "Undo the last edit or delete (Memory)"),
)


def native(keys: str) -> str:
    """The keys as this platform writes them (Ctrl is ⌘ on a Mac)."""
    return QKeySequence(keys).toString(QKeySequence.SequenceFormat.NativeText) or keys


class ShortcutSheet(QDialog):
    def __init__(self, parent=None):
        super().__init__(parent, objectName="shortcutSheet")
        self.setWindowTitle("Kelvin's keys")
        rows = [(k, what) for k, what, _ in WINDOW_KEYS] + list(VIEW_KEYS)
        self.table = QTableWidget(len(rows), 2, objectName="shortcutTable")
        self.table.setHorizontalHeaderLabels(["Keys", "What they do"])
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.setSelectionMode(QTableWidget.SelectionMode.NoSelection)
        self.table.setWordWrap(True)
        for r, (keys, what) in enumerate(rows):
            self.table.setItem(r, 0, QTableWidgetItem(native(keys)))
            self.table.setItem(r, 1, QTableWidgetItem(what))
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.resizeRowsToContents()
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, rejected=self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Everything in Kelvin can be reached from the keyboard:", wordWrap=True))
        layout.addWidget(self.table, 1)
        layout.addWidget(buttons)
        self.resize(460, 420)

    def keys(self) -> list[str]:
        return [self.table.item(r, 0).text() for r in range(self.table.rowCount())]

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.table.setFocus(Qt.FocusReason.OtherFocusReason)
