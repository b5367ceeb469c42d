"""Model output as safe HTML for Qt's text views: markdown-it-py with raw HTML off (a ``<script>``
in a reply is shown as text), dangerous link schemes refused by markdown-it itself, and every code
block given a "Copy" link (``copy:N``) whose text the view keeps.

markdown-it loads on first use (the start-up worker calls :func:`parser`), not when
the window is built: the first paint does not wait for it."""
from __future__ import annotations

import html
import re
from functools import cache

_PRE = re.compile(r"<pre>")


@cache
def parser():
    """The parser, made once (importing markdown-it takes ~0.1 s: do it off the UI thread)."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False, "breaks": True}).enable("table")


def render(text: str, prefix: str = "") -> tuple[str, list[str]]:
    """(HTML, the text of each code block in order); the copy links are ``copy:<prefix><n>``."""
    md = parser()
    tokens = md.parse(text)
    blocks = [t.content for t in tokens if t.type in ("fence", "code_block")]
    body = md.renderer.render(tokens, md.options, {})
    n = iter(range(len(blocks)))
    body = _PRE.sub(lambda m: f'<p class="copy"><a href="copy:{prefix}{next(n)}">Copy</a></p><pre>', body)
    return body, blocks


def plain(text: str) -> str:
    """Text shown as it is (a question the artist typed), with line breaks kept."""
    return html.escape(text).replace("\n", "<br>")
