"""Package data: the rendering taxonomy, prompt templates, icons and the stylesheet.

Lives at the top of the checkout as ``resources/`` and ships as ``app.resources``.
"""
from importlib import resources as _resources


def read_text(name: str) -> str:
    """Return the text of a bundled resource file such as ``taxonomy.toml``."""
    return _resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
