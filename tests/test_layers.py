"""The house rules of DESIGN.md, enforced: imports point down, and only app/ui knows Qt."""
from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"
QT = ("PySide6", "shiboken6", "PyQt5", "PyQt6", "pytestqt", "superqt", "qtpy")
LAYERS = ("app.ui", "app.services", "app.memory", "app.llm", "app.gpu", "app.core")
CORE_FORBIDDEN = ("os", "pathlib", "io", "socket", "subprocess", "shutil", "tempfile", "urllib", "http",
                  "httpx", "ollama", "lancedb", "pyarrow", "psutil", "pynvml", "sqlite3", "threading")


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules(sub: str = "") -> list[Path]:
    return sorted((APP / sub).rglob("*.py"))


def test_only_the_ui_imports_qt():
    offenders = [
        f"{p.relative_to(APP.parent)} imports {name}"
        for p in _modules()
        if "ui" not in p.relative_to(APP).parts[:1]
        for name in _imports(p)
        if name.split(".")[0] in QT
    ]
    assert offenders == []


def test_core_imports_no_other_layer_and_does_no_io():
    offenders = []
    for p in _modules("core"):
        for name in _imports(p):
            top = name.split(".")[0]
            if name.startswith("app.") and not name.startswith("app.core"):
                offenders.append(f"{p.name} imports {name}")
            if top in CORE_FORBIDDEN or top in QT:
                offenders.append(f"{p.name} imports {name}")
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "open":
                offenders.append(f"{p.name} calls open()")
    assert offenders == []


def test_imports_point_down():
    """ui → services → (memory, llm, gpu) → core: a lower layer never imports a higher one."""
    rank = {"app.ui": 3, "app.services": 2, "app.memory": 1, "app.llm": 1, "app.gpu": 1, "app.core": 0}
    offenders = []
    for p in _modules():
        mod = "app." + p.relative_to(APP).parts[0] if len(p.relative_to(APP).parts) > 1 else None
        if mod not in rank:
            continue
        for name in _imports(p):
            target = next((layer for layer in LAYERS if name == layer or name.startswith(layer + ".")), None)
            if target and rank[target] > rank[mod]:
                offenders.append(f"{p.relative_to(APP.parent)} ({mod}) imports {name}")
    assert offenders == []


def test_the_rules_catch_a_violation(tmp_path):
    """The scanner itself works: a Qt import and an upward import are seen."""
    bad = tmp_path / "bad.py"
    bad.write_text("from PySide6.QtWidgets import QWidget\nimport app.services.memory\n", encoding="utf-8")
    assert _imports(bad) == ["PySide6.QtWidgets", "app.services.memory"]
