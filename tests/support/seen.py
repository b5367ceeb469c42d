"""What a person sees of a widget: its pixels, read back from a grab."""
from __future__ import annotations

import numpy as np
from PySide6.QtGui import QImage


def pixels(widget) -> np.ndarray:
    """The widget as drawn now, an (h, w, 3) array of RGB bytes."""
    image = widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB888)
    w, h, stride = image.width(), image.height(), image.bytesPerLine()
    data = np.frombuffer(image.constBits(), dtype=np.uint8, count=stride * h).reshape(h, stride)
    return data[:, : w * 3].reshape(h, w, 3).copy()


def ink(widget, background: str | None = None, tolerance: int = 40) -> tuple[int, int, int]:
    """Where something is drawn on the widget's background: (leftmost x, rightmost x, how many
    pixels), or (-1, -1, 0) when it is blank. The background is the most common colour unless
    given ("#1e2024")."""
    px = pixels(widget).astype(np.int16)
    if background is None:
        flat = px.reshape(-1, 3)
        colours, counts = np.unique(flat, axis=0, return_counts=True)
        bg = colours[counts.argmax()]
    else:
        bg = np.array([int(background[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    marked = np.abs(px - bg).sum(axis=2) > tolerance
    cols = np.flatnonzero(marked.any(axis=0))
    if not len(cols):
        return -1, -1, 0
    return int(cols[0]), int(cols[-1]), int(marked.sum())


def has_colour(widget, colour: str, tolerance: int = 30, at_least: int = 4) -> bool:
    """Whether at least ``at_least`` pixels of the widget are drawn in ``colour`` ("#e07a2f")."""
    px = pixels(widget).astype(np.int16)
    want = np.array([int(colour[i:i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return int((np.abs(px - want).sum(axis=2) <= tolerance).sum()) >= at_least


def words_shown(window, also=()) -> list[str]:
    """Every piece of text the window shows or would show on hover: its title, labels, buttons, boxes
    and their items, tooltips, the transcript, list and table cells (display and tooltip), the
    tray's tooltip and menu — visible or one click away."""
    from PySide6.QtCore import QModelIndex, Qt
    from PySide6.QtWidgets import (
        QAbstractButton,
        QAbstractItemView,
        QComboBox,
        QLabel,
        QLineEdit,
        QListWidget,
        QPlainTextEdit,
        QTextBrowser,
        QWidget,
    )

    texts = [window.windowTitle(), window.statusBar().currentMessage(), *also]
    for widget in window.findChildren(QWidget):
        texts += [widget.toolTip(), widget.statusTip(), widget.whatsThis()]
        if isinstance(widget, (QLabel, QLineEdit, QAbstractButton)):
            texts.append(widget.text())
        if isinstance(widget, (QLineEdit, QPlainTextEdit)):
            texts.append(widget.placeholderText())
        if isinstance(widget, QTextBrowser):
            texts.append(widget.toPlainText())
        if isinstance(widget, QComboBox):
            texts += [widget.itemText(i) for i in range(widget.count())]
        if isinstance(widget, QAbstractItemView) and widget.model() is not None:
            m, root = widget.model(), QModelIndex()
            columns = 1 if isinstance(widget, QListWidget) else m.columnCount(root)
            for r in range(min(m.rowCount(root), 50)):
                for c in range(columns):
                    for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                        texts.append(str(m.index(r, c).data(role) or ""))
    tray = getattr(window, "tray", None)
    if tray is not None:
        texts += [tray.icon.toolTip(), *[a.text() for a in tray._menu.actions()]]
    return [t for t in texts if t]
