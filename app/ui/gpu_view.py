"""The GPU view: a live plot of VRAM — renderers, Kelvin's models, everything else — against the
card's total and the line where Kelvin leaves; the guard's state, its event log, and "Free VRAM
now" / "Resume". Samples and events reach it as signals from the guard's thread; the plot is
painted with QPainter from its own copy of the last ten minutes."""
from __future__ import annotations

import time
from collections import deque

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter, QPen, QPolygonF
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListWidget, QPushButton, QVBoxLayout, QWidget

from app.core.vram import OLLAMA_PROCESSES, Sample, mb_text, process_key

WINDOW_S = 600.0
COLOURS = {"renderers": QColor("#e07a2f"), "kelvin": QColor("#5fa8d3"), "others": QColor("#6b717c")}


class VramPlot(QWidget):
    """Stacked areas over time (renderers at the bottom, then Kelvin, then the rest) for GPU 0."""

    def __init__(self, renderers: frozenset[str], parent=None):
        super().__init__(parent)
        self.renderers = renderers
        self.points: deque[tuple[float, float, float, float, float]] = deque()  # t, renderers, kelvin, others, total
        self.threshold_mb: float | None = None  # "used by others" above this: Kelvin leaves
        self.setMinimumHeight(180)

    def add(self, s: Sample, kelvin_mb: int, reserve_mb: int) -> None:
        if not s.gpus:
            return
        g = s.gpus[0]
        procs = [p for p in s.processes if p.gpu == g.index]
        rend = sum(p.used_mb or 0 for p in procs if process_key(p.name) in self.renderers)
        mine = sum(p.used_mb or 0 for p in procs if process_key(p.name) in OLLAMA_PROCESSES) or kelvin_mb
        mine = min(mine, g.used_mb)
        rend = min(rend, g.used_mb - mine)
        self.points.append((s.t, rend, mine, g.used_mb - mine - rend, g.total_mb))
        while self.points and self.points[0][0] < s.t - WINDOW_S:
            self.points.popleft()
        self.threshold_mb = g.total_mb - reserve_mb
        self.update()

    def paintEvent(self, event) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        r = QRectF(self.rect()).adjusted(58, 8, -8, -18)
        p.fillRect(self.rect(), QColor("#1a1c20"))
        if not self.points:
            p.setPen(QColor("#9aa0aa"))
            p.drawText(r, Qt.AlignmentFlag.AlignCenter, "No GPU readings yet")
            return
        t0, t1 = self.points[0][0], max(self.points[-1][0], self.points[0][0] + 1)
        top = max(x[4] for x in self.points)

        def xy(t: float, mb: float) -> QPointF:
            return QPointF(r.left() + (t - t0) / (t1 - t0) * r.width(), r.bottom() - mb / top * r.height())

        below = [0.0] * len(self.points)
        for k, name in enumerate(("renderers", "kelvin", "others")):
            upper = [b + x[1 + k] for b, x in zip(below, self.points)]
            # one polygon per layer, built in one call (thousands of QPainterPath.lineTo calls per
            # paint crash PySide6 6.12 with a refcount error on None)
            outline = [xy(x[0], u) for x, u in zip(self.points, upper)]
            outline += [xy(x[0], b) for x, b in zip(reversed(self.points), reversed(below))]
            colour = QColor(COLOURS[name])
            colour.setAlpha(200)
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(colour)
            p.drawPolygon(QPolygonF(outline))
            below = upper
        p.setPen(QPen(QColor("#d8dadf"), 1))
        p.drawLine(xy(t0, top), xy(t1, top))
        if self.threshold_mb is not None:
            p.setPen(QPen(QColor("#f0b43c"), 1, Qt.PenStyle.DashLine))
            p.drawLine(xy(t0, self.threshold_mb), xy(t1, self.threshold_mb))
        p.setPen(QColor("#9aa0aa"))
        p.drawText(QRectF(0, r.top() - 6, 54, 14), Qt.AlignmentFlag.AlignRight, mb_text(top))
        p.drawText(QRectF(0, r.bottom() - 8, 54, 14), Qt.AlignmentFlag.AlignRight, "0")
        p.drawText(QRectF(r.left(), r.bottom() + 2, r.width(), 14), Qt.AlignmentFlag.AlignLeft,
                   f"last {min(WINDOW_S, t1 - t0):.0f} s")


class GpuView(QWidget):
    free_now = Signal()
    resume = Signal()

    def __init__(self, renderers: frozenset[str], parent=None):
        super().__init__(parent)
        self.state = QLabel("The VRAM guard is starting …", objectName="guardState", wordWrap=True)
        self.limit = QLabel(objectName="guardLimit", wordWrap=True)  # what the guard cannot do on this server
        self.limit.setTextFormat(Qt.TextFormat.PlainText)
        self.limit.hide()
        self.plot = VramPlot(renderers)
        legend = QLabel('<span style="color:#e07a2f">■</span> renderers &nbsp; <span style="color:#5fa8d3">■</span> '
                        'Kelvin &nbsp; <span style="color:#6b717c">■</span> everything else &nbsp; '
                        '<span style="color:#f0b43c">- -</span> Kelvin leaves above this', wordWrap=True)
        self.free_button = QPushButton("Free VRAM now", objectName="freeNow")
        self.free_button.setToolTip("Unload Kelvin's models and answer on the CPU until you resume")
        self.free_button.clicked.connect(self.free_now)
        self.resume_button = QPushButton("Resume", objectName="resume")
        self.resume_button.clicked.connect(self.resume)
        self.events = QListWidget(objectName="guardEvents")
        self.events.setWordWrap(True)
        self.nothing = QLabel(objectName="noGpu", wordWrap=True)  # in place of all of the above, without a GPU
        self.nothing.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.nothing.hide()
        buttons = QHBoxLayout()
        buttons.addWidget(self.free_button)
        buttons.addWidget(self.resume_button)
        buttons.addStretch(1)
        self.watching = QWidget()
        inner = QVBoxLayout(self.watching)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addWidget(self.plot, 3)
        inner.addWidget(legend)
        inner.addLayout(buttons)
        inner.addWidget(QLabel("What the guard did"))
        inner.addWidget(self.events, 2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.state)
        layout.addWidget(self.limit)
        layout.addWidget(self.watching, 1)
        layout.addWidget(self.nothing, 1)
        self.free_button.setEnabled(False)
        self.resume_button.setEnabled(False)

    def set_available(self, on: bool, problem: str) -> None:
        """With a GPU to watch: the plot, the log and the buttons. Without one: a plain page that says
        why, and nothing to click that would do nothing."""
        self.free_button.setEnabled(on)
        self.resume_button.setEnabled(on)
        self.watching.setVisible(on)
        self.nothing.setVisible(not on)
        if not on:
            self.state.setText("<b>Nothing to watch on this machine</b>")
            self.nothing.setText(
                f"<p>The VRAM guard is not running: {problem or 'it is switched off'}.</p>"
                "<p>It matters only where Octane or Redshift share an NVIDIA card with Kelvin's model: it watches "
                "the card's memory and, when a render needs it, unloads the model and answers on the CPU or from "
                "memory until the render is done.</p><p>Everything else in Kelvin works the same without it.</p>")

    def set_unload_problem(self, cannot: str) -> None:
        """The model server cannot unload on request: a render gets Kelvin's silence, not its VRAM. Said
        here for as long as it is so ("" takes it away)."""
        self.limit.setText(f"Kelvin cannot free the VRAM its model holds: {cannot}." if cannot else "")
        self.limit.setVisible(bool(cannot))
        self.free_button.setToolTip("Stop using the model until you resume (the server keeps it loaded)" if cannot
                                    else "Unload Kelvin's models and answer on the CPU until you resume")

    def show_state(self, state: str, reason: str) -> None:
        words = {"normal": "Kelvin is on the GPU", "yielding": "Leaving the GPU …", "yielded": "Kelvin is off the GPU",
                 "recovering": "Coming back to the GPU …", "off": "The VRAM guard is off"}.get(state, state)
        self.state.setText(f"<b>{words}</b>" + (f" — {reason}" if reason else ""))

    def add_event(self, t: float, from_state: str, to_state: str, reason: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        self.events.insertItem(0, f"{stamp}  {from_state} → {to_state}: {reason}")
        while self.events.count() > 500:
            self.events.takeItem(self.events.count() - 1)
