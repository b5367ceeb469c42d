"""Kelvin's icon (resources/icons/kelvin.svg): a thermometer whose column is a light's colour
temperature — and, in the tray and the taskbar, Kelvin's state: green when all is well, amber when
something is limited (the chat model missing, a render has the GPU), red when Ollama is not running,
grey until Kelvin knows. Rendered from the SVG at each size a tray or taskbar asks for, so it stays
sharp at 16–22 px; the installers use the SVG as it is."""
from __future__ import annotations

from functools import cache
from importlib import resources

from PySide6.QtCore import QByteArray, Qt
from PySide6.QtGui import QIcon, QPainter, QPixmap
from PySide6.QtSvg import QSvgRenderer

STATE_COLOURS = {"ok": "#7fc98a", "warn": "#f0b43c", "bad": "#e06c5a", "": "#9aa0aa"}
SIZES = (16, 20, 22, 24, 32, 48, 64, 128, 256)


@cache
def _svg() -> str:
    return resources.files("app.resources").joinpath("icons", "kelvin.svg").read_text(encoding="utf-8")


@cache
def kelvin_icon(health: str | None = None) -> QIcon:
    """The icon, its column in the colour of ``health`` ("ok", "warn", "bad", "": not known), or in the
    colour temperature's gradient (None: Kelvin's own icon)."""
    text = _svg() if health is None else _svg().replace("url(#temperature)", STATE_COLOURS.get(health, STATE_COLOURS[""]))
    renderer = QSvgRenderer(QByteArray(text.encode("utf-8")))
    icon = QIcon()
    for size in SIZES:
        pix = QPixmap(size, size)
        pix.fill(Qt.GlobalColor.transparent)
        painter = QPainter(pix)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        renderer.render(painter)
        painter.end()
        icon.addPixmap(pix)
    return icon


def worst(*healths: str) -> str:
    """The state to show when several things have one: bad over warn over ok over not known."""
    for h in ("bad", "warn", "ok"):
        if h in healths:
            return h
    return ""
