"""LanceDB, imported without the REST client Kelvin never calls.

``import lancedb`` (0.40) imports ``lance_namespace``, whose models come from the generated REST
client package ``lance_namespace_urllib3_client``; that package's ``__init__`` imports all nine of
its API classes, and pydantic builds a validator for every method of them — about 0.75 s of CPU
in every process that opens an index (each terminal command, each helper process, the window),
half of LanceDB's whole import. Kelvin opens local folders only and never talks to a namespace
server.

:func:`lancedb` therefore makes that package lazy before LanceDB is imported: its submodules
(``…models``, the data classes LanceDB does use) import as usual, and the package's own
``__init__`` — the API classes — runs only when one of its names is first asked for. Nothing
changes for code that asks: it gets the real package, loaded then. If the package is not there
or is laid out differently, LanceDB is imported the ordinary way.
"""
from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType

_REST_CLIENT = "lance_namespace_urllib3_client"
_lock = threading.Lock()


def lancedb() -> ModuleType:
    """The ``lancedb`` module (imported once per process; the REST client's APIs left until asked for)."""
    if "lancedb" not in sys.modules:
        with _lock:
            _defer_package(_REST_CLIENT)
    import lancedb as module

    return module


def _defer_package(name: str) -> None:
    if name in sys.modules:
        return
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return
    if spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    package = importlib.util.module_from_spec(spec)  # __name__, __path__, __spec__: submodules import as usual
    loading = threading.RLock()
    state = {"done": False}

    def __getattr__(attr: str):  # PEP 562: only for names the package does not have yet
        if attr.startswith("__") or state["done"]:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")
        with loading:
            if not state["done"]:
                state["done"] = True
                spec.loader.exec_module(package)  # the real __init__, in the same module object
        try:
            return package.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    package.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = package
