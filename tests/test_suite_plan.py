"""The suite's own plan on two workers (tests/conftest.py, README's `-n auto`, `--dist loadfile`): a
module's tests run on one worker, so a module-scoped fixture is set up once per run (the real-model
tier's llama-server is started once), and the modules with the most slow work start first. Run for
real: pytest with pytest-xdist on a small suite in a temp folder, under this repository's conftest."""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SHARED = '''
import os
import pytest

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    (tmp_path_factory.getbasetemp().parent / f"started-{os.getpid()}").write_text("")
    return os.getpid()

''' + "\n".join(f"def test_shared_{i}(server):\n    assert server == os.getpid()\n" for i in range(6))

OTHERS = "import pytest\n\n" + "\n".join(f"def test_quick_{i}():\n    pass\n" for i in range(12)) + '''
@pytest.mark.slow(seconds=30)
def test_long():
    pass

@pytest.mark.slow
def test_longish():
    pass
'''


def test_a_shared_module_fixture_is_set_up_once_and_the_slowest_module_starts_first(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(ROOT / "tests" / "conftest.py", suite / "conftest.py")
    (suite / "test_b_slow.py").write_text(OTHERS, encoding="utf-8")
    (suite / "test_a_shared.py").write_text(SHARED, encoding="utf-8")
    ours = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]["ini_options"]
    (suite / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: as in pyproject.toml\n    gui: as in pyproject.toml\n"
                                      f"addopts = {ours['addopts']}\n", encoding="utf-8")  # the suite's --dist
    base = tmp_path / "base"
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2", "-v",
                          "--basetemp", str(base)], cwd=suite, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    ran = re.findall(r"\[(gw\d)\] \[\s*\d+%\] PASSED (\S+)", run.stdout)
    assert len(ran) == 20, run.stdout[-3000:]
    workers = {node.split("::")[1]: gw for gw, node in ran}
    assert len({workers[f"test_shared_{i}"] for i in range(6)}) == 1  # one worker ran the module's tests
    assert len(list(base.glob("started-*"))) == 1  # and its fixture was set up once in the whole run
    # both workers worked; the module with the slow tests (by their marks) was planned first
    assert set(workers.values()) == {"gw0", "gw1"}
    collected = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q"],
                               cwd=suite, capture_output=True, text=True, timeout=300).stdout.split()
    assert collected[0] == "test_b_slow.py::test_quick_0" and collected[14] == "test_a_shared.py::test_shared_0"
