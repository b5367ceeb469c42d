"""Kelvin's icon for the platforms, drawn from ``resources/icons/kelvin.svg`` with Qt's own SVG
renderer: ``kelvin.png`` (256 px, Linux menus and the PyInstaller icon there) and ``kelvin.ico``
(16–256 px, PNG-compressed entries as Windows Vista and later read them; the executables, the
installer and the shortcuts). No image library beyond Qt is needed.

    python installer/icons.py OUT_DIR
"""
from __future__ import annotations

import os
import struct
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SVG = ROOT / "resources" / "icons" / "kelvin.svg"
ICO_SIZES = (16, 24, 32, 48, 64, 128, 256)


def _png(renderer, size: int) -> bytes:
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice, Qt
    from PySide6.QtGui import QImage, QPainter

    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buffer, "PNG"):
        raise RuntimeError(f"Qt could not encode a {size} px PNG")
    return bytes(data.data())


def ico(images: dict[int, bytes]) -> bytes:
    """An .ico file holding ``{size: png bytes}`` (ICONDIR, one ICONDIRENTRY each, then the PNGs)."""
    sizes = sorted(images)
    out = struct.pack("<HHH", 0, 1, len(sizes))
    offset = 6 + 16 * len(sizes)
    for size in sizes:
        data = images[size]
        side = 0 if size >= 256 else size  # 0 means 256 in an ICONDIRENTRY
        out += struct.pack("<BBBBHHII", side, side, 0, 0, 1, 32, len(data), offset)
        offset += len(data)
    return out + b"".join(images[s] for s in sizes)


def make(out: Path) -> dict[str, Path]:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication
    from PySide6.QtSvg import QSvgRenderer

    app = QGuiApplication.instance() or QGuiApplication([])  # noqa: F841 (QImage/QPainter need one)
    renderer = QSvgRenderer(str(SVG))
    if not renderer.isValid():
        raise RuntimeError(f"{SVG} is not an SVG Qt can draw")
    out.mkdir(parents=True, exist_ok=True)
    pngs = {size: _png(renderer, size) for size in ICO_SIZES}
    paths = {"png": out / "kelvin.png", "ico": out / "kelvin.ico", "svg": out / "kelvin.svg"}
    paths["png"].write_bytes(pngs[256])
    paths["ico"].write_bytes(ico(pngs))
    paths["svg"].write_bytes(SVG.read_bytes())
    return paths


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    for kind, path in make(Path(sys.argv[1])).items():
        print(f"{kind}: {path} ({path.stat().st_size} bytes)")
