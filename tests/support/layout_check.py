"""Walk a window's visible widgets and say what is clipped by its parent or overlaps a sibling."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractButton, QAbstractScrollArea, QAbstractSpinBox, QComboBox, QLabel, QTabBar,
                               QWidget)


def _inside_own_parts(w: QWidget) -> bool:
    """Children a composite widget draws for itself (a scroll area's viewport and bars, a tab bar's
    scroll buttons, a combo box's or a spin box's parts): the composite lays them out, not us."""
    p = w.parentWidget()
    while p is not None:
        if isinstance(p, (QAbstractScrollArea, QTabBar, QComboBox, QAbstractSpinBox)):
            return True
        p = p.parentWidget()
    return False


def problems(window: QWidget) -> list[str]:
    out = []
    for w in window.findChildren(QWidget):
        if not w.isVisible() or w.isWindow() or _inside_own_parts(w):
            continue
        parent = w.parentWidget()
        if parent is None:
            continue
        g = w.geometry()
        if g.width() <= 0 or g.height() <= 0:
            continue
        if not parent.rect().contains(g):
            out.append(f"clipped: {type(w).__name__}#{w.objectName()} {g.getRect()} in "
                       f"{type(parent).__name__}#{parent.objectName()} {parent.rect().getRect()}")
        if isinstance(w, (QLabel, QAbstractButton, QComboBox)) and not (isinstance(w, QLabel) and w.wordWrap()) \
                and g.width() < w.minimumSizeHint().width() - 1:
            out.append(f"squeezed: {type(w).__name__}#{w.objectName()} {g.width()} px < "
                       f"{w.minimumSizeHint().width()} px ({getattr(w, 'text', lambda: '')()!r})")
        for s in parent.findChildren(QWidget, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if s is w or not s.isVisible() or s.isWindow() or id(s) < id(w):
                continue
            if s.geometry().intersects(g) and s.geometry().width() > 0 and s.geometry().height() > 0:
                out.append(f"overlap: {type(w).__name__}#{w.objectName()} {g.getRect()} and "
                           f"{type(s).__name__}#{s.objectName()} {s.geometry().getRect()}")
    return out


def main(widths: list[int]) -> int:
    """Run in a fresh process (``QT_SCALE_FACTOR`` is read when Qt starts): the window, every view at
    each width, what is wrong as JSON lines on stdout, exit 0 when nothing is."""
    import json
    import os
    import tempfile
    import time

    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.config import load
    from app.ui.main_window import MainWindow

    app = QApplication([])
    folder = tempfile.mkdtemp(prefix="kelvin-layout-")
    window = MainWindow(load({"data_dir": os.path.join(folder, "data")}),
                        QSettings(os.path.join(folder, "w.ini"), QSettings.Format.IniFormat))
    window.show()
    bad = 0
    for width in widths:
        for view in range(window.tabs.count()):
            window.tabs.setCurrentIndex(view)
            window.resize(width, 900)
            for _ in range(6):
                app.processEvents()
                time.sleep(0.02)  # (tight processEvents loops crash PySide6 6.12)
            found = problems(window)
            if window.width() != width:
                found.append(f"the window is {window.width()} px wide, not {width}")
            for p in found:
                print(json.dumps({"width": width, "view": view, "problem": p}), flush=True)
            bad += len(found)
    window.close()
    return 1 if bad else 0


if __name__ == "__main__":
    import sys

    sys.exit(main([int(w) for w in sys.argv[1:]] or [360, 480, 900, 1600]))
