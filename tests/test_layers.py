"""The floors of DESIGN.md, enforced by import-linter's contracts in pyproject.toml ([tool.importlinter]):
imports point down, app.core is pure, only app.ui knows Qt, the window reaches storage through the
services, no circle of imports. These tests run the real ``lint-imports`` on the real package, and on a
copy of it with a violation planted, so that a contract that stopped catching anything would fail here."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
APP = ROOT / "app"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS = ("floors", "qt-only-in-ui", "ui-through-services", "core-is-pure", "no-cycles")


def lint_imports(root: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with root's pyproject.toml, reading the ``app`` package found at root."""
    if not LINT_IMPORTS.exists():
        pytest.fail(f"{LINT_IMPORTS} is missing: pip install -e '.[test]' (import-linter is a test dependency)")
    env = {**os.environ, "PYTHONPATH": str(root), "NO_COLOR": "1"}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", str(root / "pyproject.toml")],
                          cwd=root, env=env, capture_output=True, text=True, timeout=120)


def broken_section(report: str, contract: str) -> str:
    """What lint-imports says under "Broken contracts" about one contract (by the start of its name),
    white space folded; "" when it is not broken."""
    for section in report.partition("Broken contracts")[2].split("\n\n\n"):
        if section.strip("- \n").startswith(contract):
            return " ".join(section.split())
    return ""


def test_every_contract_is_kept():
    run = lint_imports(ROOT)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in run.stdout


def test_every_contract_is_in_pyproject():
    import tomllib

    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    assert tuple(c["id"] for c in config["contracts"]) == CONTRACTS
    floors = next(c for c in config["contracts"] if c["id"] == "floors")
    assert floors["exhaustive"] is True and floors["containers"] == ["app"]


# (where the planted module goes, its source, the contract it must break, what the report must name)
PLANTED = [
    pytest.param("app/memory/planted.py", "from ..ui import main_window\n", "Imports point down",
                 "app.memory.planted -> app.ui.main_window", id="relative-upward"),
    pytest.param("app/core/planted.py", "def later():\n    from app.services import memory\n", "Imports point down",
                 "app.core.planted -> app.services.memory", id="upward-inside-a-function"),
    pytest.param("app/llm/planted.py", "from app.memory import journal\n", "Imports point down",
                 "app.llm.planted -> app.memory.journal", id="between-independent-siblings"),
    pytest.param("app/plugins/__init__.py", "", "Imports point down", "app.plugins", id="a-package-without-a-floor"),
    pytest.param("app/services/planted.py", "from PySide6.QtCore import QObject\n", "Only app.ui imports Qt",
                 "app.services.planted -> PySide6", id="qt-outside-the-ui"),
    pytest.param("app/ui/planted.py", "from app.memory import journal\n", "The window reaches",
                 "app.ui.planted -> app.memory.journal", id="window-past-the-services"),
    pytest.param("app/core/planted.py", "import os\n", "app.core does no I/O", "app.core.planted -> os",
                 id="io-in-the-core"),
    pytest.param("app/gpu/planted.py", "from . import nvml\n", "No circle of imports", "app.gpu",
                 id="a-circle"),
]


@pytest.mark.parametrize("where, source, contract, named", PLANTED)
def test_a_planted_violation_breaks_its_contract(tmp_path, where, source, contract, named):
    shutil.copytree(APP, tmp_path / "app", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    assert lint_imports(tmp_path).returncode == 0  # the copy itself is clean
    planted = tmp_path / where
    planted.parent.mkdir(exist_ok=True)
    planted.write_text(source, encoding="utf-8")
    if where == "app/gpu/planted.py":  # and nvml imports it back: a circle inside app.gpu
        nvml = tmp_path / "app/gpu/nvml.py"
        nvml.write_text(nvml.read_text(encoding="utf-8") + "\nfrom app.gpu import planted  # noqa: E402\n",
                        encoding="utf-8")
    run = lint_imports(tmp_path)
    assert run.returncode == 1, run.stdout + run.stderr
    assert named in broken_section(run.stdout, contract), run.stdout


def test_the_core_opens_no_file():
    """What import-linter cannot see: a call of the built-in open() in app.core."""
    offenders = [
        f"{p.relative_to(ROOT)}:{node.lineno}"
        for p in sorted((APP / "core").rglob("*.py"))
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "open"
    ]
    assert offenders == []
