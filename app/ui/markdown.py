"""Model output as safe HTML for Qt's text views: markdown-it-py with raw HTML off (a ``<script>``
in a reply is shown as text), dangerous link schemes refused by markdown-it itself, every code
block given a "Copy" link (``copy:N``) whose text the view keeps, fenced code coloured by Pygments
(inline colours, which Qt's rich text draws), and tables with their borders.

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

    _lexer("python")  # Pygments loads here too, off the UI thread
    return MarkdownIt("commonmark", {"html": False, "breaks": True, "highlight": _highlight}).enable("table")


CODE_STYLE = "monokai"  # dark, like the transcript


@cache
def _formatter():
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(style=CODE_STYLE, noclasses=True, nowrap=True)


@cache
def _lexer(lang: str):
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:
        return get_lexer_by_name(lang, stripnl=False)
    except ClassNotFound:
        return None


def _highlight(code: str, lang: str, _attrs) -> str:
    """A fenced block's code as coloured spans ("" when its language is not named or not known:
    markdown-it then escapes it as plain text). Pygments escapes the code itself."""
    lexer = _lexer(lang.strip().lower()) if lang and lang.strip() else None
    if lexer is None:
        return ""
    try:
        from pygments import highlight
    except ImportError:  # Pygments missing: plain code
        return ""
    return highlight(code, lexer, _formatter())


def render(text: str, prefix: str = "") -> tuple[str, list[str]]:
    """(HTML, the text of each code block in order); the copy links are ``copy:<prefix><n>``."""
    md = parser()
    tokens = md.parse(text)
    blocks = [t.content for t in tokens if t.type in ("fence", "code_block")]
    body = md.renderer.render(tokens, md.options, {})
    n = iter(range(len(blocks)))
    body = _PRE.sub(lambda m: f'<p class="copy"><a href="copy:{prefix}{next(n)}">Copy</a></p><pre>', body)
    # Qt draws these borders; collapsed, a table as wide as the room ends inside it (not 1 px past it)
    body = body.replace("<table>", '<table border="1" cellspacing="0" cellpadding="4" style="border-collapse: collapse">')
    return body, blocks


_TAG = re.compile(r"(<[^>]*>)")
_LONG_RUN = re.compile(r"[^\s<>&]{%d,}" % 28)
_BREAK_AFTER = re.compile(r"([/\\_.\-=,:;|)\]}])(?=[^\s])")
ZWSP = "\u200b"


def soft_breaks(html_text: str) -> str:
    """The HTML with a place to break in every long run of text without a space (a path, a URL, a long
    identifier in code): after its separators, or every 20 characters where it has none. A view that
    breaks lines only between words (so a table's header never breaks mid-word) can still fit a
    narrow width. The places are zero-width spaces: nothing shows, and a copy leaves them out."""
    def run(m: re.Match) -> str:
        text = _BREAK_AFTER.sub(lambda s: s.group(1) + ZWSP, m.group(0))
        return re.sub(r"([^\u200b]{20})(?=[^\u200b])", lambda s: s.group(1) + ZWSP, text)

    return "".join(part if part.startswith("<") else _LONG_RUN.sub(run, part) for part in _TAG.split(html_text))


def plain(text: str) -> str:
    """Text shown as it is (a question the artist typed), with line breaks kept."""
    return html.escape(text).replace("\n", "<br>")


_FENCE = re.compile(r"^\s*(```|~~~)[^\n]*$", re.MULTILINE)
_MARKS = re.compile(r"(\*\*|__|~~|`)")
_EMPH = re.compile(r"(?<![\w*])[*_](?=\S)(.+?)(?<=\S)[*_](?![\w*])")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.MULTILINE)
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$", re.MULTILINE)
_TABLE_ROW = re.compile(r"^[ \t]*\|(.*)\|[ \t]*$", re.MULTILINE)


def stripped(text: str) -> str:
    """A message as one line of readable words: no Markdown marks (``**``, backticks, fences, ``#``
    headings, link targets, a table's pipes and rule), the whitespace folded. For lists and
    previews, not for editing."""
    text = _FENCE.sub(" ", text)
    if "|" in text:  # a table's rows as words: "GI clamp · 25 · 10", its rule line gone
        text = _TABLE_RULE.sub(" ", text)
        text = _TABLE_ROW.sub(lambda m: " · ".join(c.strip() for c in m.group(1).split("|") if c.strip()) + ";", text)
    text = _LINK.sub(r"\1", text)
    text = _HEADING.sub("", text)
    text = _MARKS.sub("", text)
    text = _EMPH.sub(r"\1", text)
    return " ".join(text.split())
