"""Will the window open on this desktop? Asked by ``kelvin`` before it makes the QApplication (Qt
itself would abort naming only the first missing library) and by ``kelvin --self-test``."""
from __future__ import annotations

import ctypes
import re
import shutil
import subprocess
import sys
from pathlib import Path

from PySide6.QtCore import QLibraryInfo


def check_desktop() -> tuple[str, str]:
    """Will the window open on this desktop? On Linux Qt's X11 plugin needs a few system libraries
    (libxcb-cursor0 is the one most often missing); their absence is told, with the package to
    install, as a warning: the bundle itself is fine and runs headless."""
    plugins = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"
    if sys.platform == "win32":
        found = (plugins / "qwindows.dll").is_file()
        return ("ok", "the Windows platform plugin is present") if found else ("FAIL", f"qwindows.dll missing in {plugins}")
    if sys.platform == "darwin":
        found = (plugins / "libqcocoa.dylib").is_file()
        return ("ok", "the macOS platform plugin is present") if found else ("FAIL", f"libqcocoa.dylib missing in {plugins}")
    xcb = plugins / "libqxcb.so"
    if not xcb.is_file():
        return "FAIL", f"Qt's X11 platform plugin is missing ({xcb})"
    missing = missing_libraries(xcb)
    if missing:
        packages = " ".join(dict.fromkeys(debian_package(lib) for lib in missing))
        return "warn", (f"the window cannot open on an X11 desktop here: {', '.join(missing)} missing "
                        f"(Debian/Ubuntu: sudo apt install {packages})")
    return "ok", "Qt's X11 platform plugin loads (the window can open on this desktop)"


def missing_libraries(library: Path) -> list[str]:
    """The system libraries ``library`` needs that this machine lacks: all of them from ``ldd``,
    else the first one the dynamic loader names."""
    ldd = shutil.which("ldd")
    if ldd:
        out = subprocess.run([ldd, str(library)], capture_output=True, text=True, timeout=30).stdout
        return list(dict.fromkeys(m.group(1) for m in re.finditer(r"^\s*(\S+) => not found", out, re.M)))
    try:
        ctypes.CDLL(str(library))
    except OSError as exc:
        named = re.search(r"(lib[\w.+-]+\.so[\d.]*)", str(exc))
        return [named.group(1) if named else str(exc)]
    return []


def debian_package(soname: str) -> str:
    """Debian's package for a shared library: ``libxcb-icccm.so.4`` → ``libxcb-icccm4``,
    ``libxkbcommon-x11.so.0`` → ``libxkbcommon-x11-0`` (a hyphen when the name ends in a digit)."""
    m = re.fullmatch(r"(lib[\w.+-]+?)\.so\.(\d+)(?:\.[\d.]*)?", soname)
    if not m:
        return soname
    name, major = m.group(1).lower(), m.group(2)
    return f"{name}-{major}" if name[-1].isdigit() else f"{name}{major}"
