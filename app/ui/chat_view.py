"""The chat: a transcript rendered from Markdown, a composer (Enter sends, Shift+Enter breaks the
line), a stop button, and under each answer a fold-out of what Kelvin looked at and the settings
the turn stated, as chips the artist confirms, corrects or turns down (the window takes these to
the settings ledger).

The view only draws and reacts: it emits :attr:`ChatView.send` and :attr:`ChatView.stop`; the
window runs the turn on a worker and feeds the tokens back with :meth:`append`. The transcript is
the current project's: the window hands in its last messages (:meth:`set_history`) and, when the
artist scrolls to the top, earlier ones a page at a time (:attr:`earlier_wanted`,
:meth:`prepend_history`); a line marks each new day. Tokens arrive
fast; the reply is re-rendered at most every 50 ms (a coalescing timer), and only from the entry
that changed to the end: the entries above it stay in the document as they are (re-rendering a
full transcript took 50-100 ms on a 2-core machine, each time).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from PySide6.QtCore import QEvent, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (QCursor, QFont, QFontMetrics, QGuiApplication, QKeyEvent, QTextCursor, QTextDocument,
                           QTextOption)
from PySide6.QtWidgets import (QHBoxLayout, QInputDialog, QMenu, QPlainTextEdit, QPushButton, QTextBrowser, QToolButton,
                               QVBoxLayout, QWidget)

from app.core.render_settings.answer_tables import find_tables, stacked
from app.core.render_settings.chips import ALREADY, IN_USE, SUGGESTED, Chip
from app.core.dates import as_read, day_as_read
from app.core.render_settings.parameters import format_value
from app.ui.paced import Paced
from app.ui.markdown import ZWSP, plain, render, soft_breaks, stripped
from app.ui.words import plain_words, reply_end

TRANSCRIPT_CSS = """
.who { color: #9aa0aa; font-size: 9pt; margin-bottom: 2px; }
.when { color: #6b717c; }
table { border-color: #3a3f47; margin: 4px 0; }
th { background-color: #262a30; }
.fold { color: #9aa0aa; font-size: 9pt; }
.hello { color: #c8ccd3; margin: 24px 8px; }
.hellohead { color: #ffffff; font-size: 13pt; font-weight: bold; }
table.you { background-color: #2b3038; border-width: 0; margin: 8px 0 8px 40px; }
.kelvin { margin: 6px 40px 10px 0; }
.notice { color: #f0b43c; font-size: 9pt; margin: 4px 0; }
pre { background-color: #15171a; font-family: monospace; padding: 6px; white-space: pre-wrap; }
code { font-family: monospace; color: #e6c07b; }
.copy { font-size: 8pt; margin: 0; }
.look { font-size: 9pt; margin-top: 4px; }
.looked { color: #9aa0aa; font-size: 9pt; }
a { color: #e0914f; }
.chips { font-size: 9pt; margin-top: 6px; }
.chiphead { color: #9aa0aa; font-size: 8pt; margin: 0; }
.chip { margin: 1px 0; }
.chipst { color: #9aa0aa; }
.chipdone { color: #9aa0aa; }
a.chiplink { color: #e6e8eb; text-decoration: none; }
.day { color: #6b717c; font-size: 8pt; margin: 12px 0 2px 0; }
.earlier { font-size: 9pt; margin: 2px 0 8px 0; }
"""
MAX_SHOWN = 60  # messages kept in the transcript view (everything stays in memory and in the browser)
TRIM = 10  # dropped from the top at once when over MAX_SHOWN (dropping renders the whole transcript again)
RENDER_MS = 50


LINE_CHARS = 96  # the longest line of the transcript at full screen, in average characters
ANSWER_MARGIN_PX = 40  # .kelvin's right margin below
TABLE_CELL_PX = 12  # a table cell's padding (4 a side) and borders
_REFIT_EVENTS = (QEvent.Type.Resize, QEvent.Type.Show, QEvent.Type.FontChange, QEvent.Type.StyleChange,
                 QEvent.Type.ScreenChangeInternal, QEvent.Type.DevicePixelRatioChange)


@dataclass
class _Entry:
    role: str  # "user" | "assistant" | "notice"
    text: str
    status: str = ""  # "", "streaming", "cancelled", "cut", "failed", "recall"
    looked_at: list[str] = field(default_factory=list)  # what went into the prompt, one line each
    open: bool = False  # the fold-out is open
    blocks: list[str] = field(default_factory=list)
    chips: list[Chip] = field(default_factory=list)
    chips_noted: bool = True  # its chips are in the turn's note (else read from the ledger, noted when answered)
    turn_id: str = ""
    ts_ms: int = 0  # when it was said (a new day gets a line above it)
    message_id: str = ""  # the stored message it shows (never shown itself)
    who: str = ""  # another speaker than "You" (an imported conversation)
    copied: int = -1  # the code block just copied: its link says "Copied" for a moment
    unfolded: bool = False  # a long paste shown whole
    stacked: frozenset = frozenset()  # its tables drawn as lists (too wide for the room); "edge": the rest kept inside
    table_needs: tuple = ()  # (the text measured, the least width of each of its tables without a broken word)


_LINK_WORDS = {"copy": "Copy this code", "unfold": "Show the whole message", "look": "Show or hide what Kelvin looked at",
               "earlier": "Show earlier messages", "chip:menu": "Use, correct or take out this value",
               "chip:confirm": "Use this value",
               "chip:correct": "Correct this value", "chip:reject": "Not this setting: take it out"}


def link_words(url: str) -> str:
    """What a link in the transcript does, in words: an internal link's target is never shown."""
    if url.startswith(("http://", "https://", "mailto:")):
        return url
    scheme, _, rest = url.partition(":")
    if scheme == "chip":
        scheme = f"chip:{rest.partition(':')[0]}"
    return _LINK_WORDS.get(scheme, "")


def _now_ms() -> int:
    return int(datetime.now().timestamp() * 1000)


def _clock(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000).strftime("%H:%M") if ts_ms else ""


CHIP_ACTIONS = (("confirm", "✓  Use this value"), ("correct", "✎  Correct the value…"),
                ("reject", "✗  Not this setting: take it out"))
CHIP_COLOURS = {IN_USE: "#7fc98a", ALREADY: "#7fc98a", SUGGESTED: "#f0b43c", "to_confirm": "#f0b43c"}  # else grey
FOLD_CHARS = 1500  # a question longer than this shows its start and "show all"
COPIED_MS = 1800
COMPOSER_LINES = (2, 10)  # the input's height, in lines: it grows with its text up to the second
HELLO = ("<p class='hellohead'>Hello — Kelvin remembers this project for you.</p>"
         "<p>Ask about lighting, shading, camera or render settings; Kelvin answers with what was said and "
         "decided here before, and keeps every setting you state (Memory → Settings). "
         "<b>End of day</b> in the Brief view writes the project's brief; tomorrow starts from it.</p>")


def _day(ts_ms: int) -> str:
    return day_as_read(ts_ms)


class Composer(QPlainTextEdit):
    """Enter sends; Shift+Enter is a new line; Tab and Shift+Tab move on to the next or previous part
    of the window (Ctrl+Tab types a tab). Grows with its text, from COMPOSER_LINES[0] lines up to
    COMPOSER_LINES[1] (then it scrolls)."""

    submitted = Signal()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.setTabChangesFocus(True)
        self.textChanged.connect(self.fit)
        self.fit()

    def fit(self) -> None:
        line = self.fontMetrics().lineSpacing()
        lines = int(self.document().size().height()) or 1  # a plain text document counts in lines
        low, high = COMPOSER_LINES
        frame = int(self.document().documentMargin() * 2 + self.frameWidth() * 2 + 8)
        self.setFixedHeight(max(low, min(high, lines)) * line + frame)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
            self.submitted.emit()
            return
        if event.key() == Qt.Key.Key_Tab and event.modifiers() & Qt.KeyboardModifier.ControlModifier:
            if not self.isReadOnly():
                self.insertPlainText("\t")
            return
        super().keyPressEvent(event)


class Transcript(QTextBrowser):
    """The transcript's browser: a copy of a selection leaves out the soft breaks Kelvin put in long
    words (they are there to let a narrow view wrap, not to be pasted)."""

    def createMimeDataFromSelection(self):
        data = super().createMimeDataFromSelection()
        if data.hasText():
            data.setText(data.text().replace(ZWSP, ""))
        if data.hasHtml():
            data.setHtml(data.html().replace(ZWSP, ""))
        return data


class ChatView(QWidget):
    send = Signal(str)
    stop = Signal()
    chip_action = Signal(str, object, str)  # "confirm" | "correct" | "reject", the Chip, the corrected value
    earlier_wanted = Signal(object, list)  # the oldest shown message's time (ms: past 32 bits) and the ids shown then
    link_hovered = Signal(str)  # what the link under the mouse does, in words ("" when it leaves)

    def __init__(self, parent=None):
        super().__init__(parent)
        self._built = False  # style and font changes arrive while the view is made: nothing to fit yet
        self._rendering = False  # drawing now (a resize it causes must not draw again from inside it)
        self.transcript = Transcript(objectName="transcript")
        # lines break between words only (so a table's header never breaks mid-word); long runs without
        # a space carry soft breaks (markdown.soft_breaks), so nothing is wider than the view
        self.transcript.setWordWrapMode(QTextOption.WrapMode.WordWrap)
        self.transcript.setOpenLinks(False)  # links are shown, never followed on their own
        self.transcript.setOpenExternalLinks(False)
        self.transcript.anchorClicked.connect(self._anchor)
        self.transcript.document().setDefaultStyleSheet(TRANSCRIPT_CSS)
        self.transcript.document().setUndoRedoEnabled(False)  # edited in place: no history to keep
        self._measure = -1  # the transcript's side margins now (see _fit_measure)
        self.transcript.viewport().installEventFilter(self)  # its width decides the line
        self._scratch = QTextDocument(self)  # where an entry's HTML is parsed before it goes in
        self._scratch.setDefaultStyleSheet(TRANSCRIPT_CSS)
        self._scratch.setUndoRedoEnabled(False)
        self._starts: list[int] = []  # where each entry begins in the transcript's document (those drawn)
        self._drawing = Paced(self._draw_one, self._drawn, self, name="transcriptDrawing")  # entries drawn a slice of time at a time
        self._then: list = []  # what waits for every entry to be drawn (when_drawn)
        self.chip_menu: QMenu | None = None  # a chip's menu while it is open
        self.composer = Composer(objectName="composer")
        self.composer.setPlaceholderText("Ask about lighting, shading, render settings …  (Enter sends, Shift+Enter: new line)")

        self.composer.submitted.connect(self._submit)
        self.send_button = QPushButton("Send", objectName="send")
        self.send_button.clicked.connect(self._submit)
        self.stop_button = QPushButton("Stop", objectName="stop")
        self.stop_button.setToolTip("Stop the reply (Esc); what was written is kept")
        self.stop_button.clicked.connect(self.stop)
        self.stop_button.setEnabled(False)
        buttons = QVBoxLayout()
        buttons.addWidget(self.send_button)
        buttons.addWidget(self.stop_button)
        row = QHBoxLayout()
        row.addWidget(self.composer, 1)
        row.addLayout(buttons)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.transcript, 1)
        layout.addLayout(row)
        self.entries: list[_Entry] = []
        self.more_above = False  # earlier messages are in the store, not shown yet
        self._asked_earlier = False
        self.transcript.highlighted.connect(lambda url: self.link_hovered.emit(link_words(url.toString())))
        bar = self.transcript.verticalScrollBar()
        bar.rangeChanged.connect(self._range_changed)
        # the artist's own scrolling (wheel, keys, drag) says whether they read the latest; the
        # document growing or the window resizing moves the bar too, and must not
        bar.actionTriggered.connect(self._artist_scrolls)
        self._at_end = True  # the artist reads the latest: a resize or a new line keeps it in view
        # scrolled up to read: a button back to the latest, over the transcript's bottom right corner
        self.jump = QToolButton(self.transcript, objectName="jumpLatest", text="↓ Latest")
        self.jump.setToolTip("Back to the latest message")
        self.jump.clicked.connect(self.jump_to_latest)
        self.jump.hide()
        self._timer = QTimer(self, singleShot=True, interval=RENDER_MS)
        self._timer.timeout.connect(lambda: self._render(len(self.entries) - 1))
        self.set_ready(False, "Kelvin is starting …")
        self._built = True

    # ---- from the window -------------------------------------------------------------------------
    def set_ready(self, ready: bool, why: str = "") -> None:
        self.composer.setReadOnly(not ready)
        self.send_button.setEnabled(ready)
        if why:
            self.composer.setPlaceholderText(why)

    def set_busy(self, busy: bool) -> None:
        self.send_button.setEnabled(not busy)
        self.stop_button.setEnabled(busy)

    def add(self, role: str, text: str, status: str = "") -> _Entry:
        entry = _Entry(role, text, status, ts_ms=_now_ms())
        self.entries.append(entry)
        if len(self.entries) > MAX_SHOWN:
            del self.entries[:len(self.entries) - MAX_SHOWN + TRIM]
            self.more_above = True  # what was dropped is a scroll away
            self._render()  # indexes moved (the links carry them)
        else:
            self._render(len(self.entries) - 1)
        return entry

    def set_history(self, messages: list, more: bool, extras: dict | None = None) -> None:
        """Show a project's transcript: its last ``messages`` (oldest first); ``more``: earlier ones
        are in the store; ``extras``: by answer id, (what it looked at, its chips, whether they are
        noted). What was shown before (another project's) goes."""
        self._timer.stop()
        notices = [e for e in self.entries if e.role == "notice"]  # said while it loaded: they stay, below
        self.entries = [_history_entry(m, extras) for m in messages] + notices
        self.more_above, self._asked_earlier = more, False
        self._at_end = True
        self._render()
        bar = self.transcript.verticalScrollBar()
        bar.setValue(bar.maximum())

    def add_from_elsewhere(self, messages: list, extras: dict | None = None) -> int:
        """Messages another Kelvin process stored in this project (``kelvin chat --once`` in a
        terminal, an import): each goes where it belongs by time among the stored messages shown —
        the latest at the bottom — unless it is shown already or older than everything shown (then it
        is a scroll away). Returns how many were added."""
        shown = {e.message_id for e in self.entries if e.message_id}
        stamped = [e.ts_ms for e in self.entries if e.message_id]
        oldest = min(stamped, default=0)
        new = sorted((m for m in messages if m.id not in shown and (m.ts_ms >= oldest or not stamped)),
                     key=lambda m: (m.ts_ms, m.id))
        if not new:
            return 0
        first = len(self.entries)
        for m in new:
            at = next((i for i, e in enumerate(self.entries) if e.message_id and e.ts_ms > m.ts_ms), len(self.entries))
            self.entries.insert(at, _history_entry(m, extras))
            first = min(first, at)
        if len(self.entries) > MAX_SHOWN:
            del self.entries[:len(self.entries) - MAX_SHOWN + TRIM]
            self.more_above, first = True, 0
        self._render(first)
        return len(new)

    def prepend_history(self, messages: list, more: bool, extras: dict | None = None) -> None:
        """Earlier messages, put above what is shown; the view stays where the artist was reading."""
        shown = {e.message_id for e in self.entries if e.message_id}
        older = [_history_entry(m, extras) for m in messages if m.id not in shown]
        self.more_above, self._asked_earlier = more and bool(older), False
        if not older and not self.entries:
            return
        bar = self.transcript.verticalScrollBar()
        from_bottom = bar.maximum() - bar.value()
        self.entries[:0] = older
        self._at_end = False
        self._render()
        self.when_drawn(lambda: bar.setValue(max(0, bar.maximum() - from_bottom)))

    def clear(self) -> None:
        self._timer.stop()
        self.entries, self.more_above = [], False
        self._render()

    def _artist_scrolls(self, _action: int) -> None:
        """Said at once (the bar's slider position is already where the artist is taking it), so that
        a redraw arriving before the move is applied (the chips of the last answer) keeps it; the rest
        once the move is done."""
        bar = self.transcript.verticalScrollBar()
        self._at_end = bar.sliderPosition() >= bar.maximum() - 4
        QTimer.singleShot(0, self, self._moved_by_artist)

    def _moved_by_artist(self) -> None:
        """The artist scrolled (wheel, keys, drag): whether they read the latest, and at the top the
        earlier messages. Only their own scrolling asks for those: a new document's bar starts at
        the top too, and must not load the whole history page after page."""
        bar = self.transcript.verticalScrollBar()
        self._at_end = bar.value() >= bar.maximum() - 4
        self._place_jump()
        if bar.value() == bar.minimum() and self.more_above and self.isVisible():
            self._want_earlier()

    def jump_to_latest(self) -> None:
        self._at_end = True
        self._keep_at_end()

    def _place_jump(self) -> None:
        self.jump.setVisible(not self._at_end)
        if not self._at_end:
            self.jump.adjustSize()
            area = self.transcript.viewport().geometry()
            self.jump.move(area.right() - self.jump.width() - 12, area.bottom() - self.jump.height() - 10)
            self.jump.raise_()

    def _range_changed(self, _low: int, _high: int) -> None:
        if self._at_end:  # after the layout that changed the range has settled
            QTimer.singleShot(0, self, self._keep_at_end)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_measure()
        self._place_jump()

    def showEvent(self, event) -> None:
        """Shown again after whatever happened while hidden (another tab, minimised, resized, moved
        to another screen): the line is measured again against the width the transcript has now,
        once the layout has given it that width."""
        super().showEvent(event)
        self._fit_measure()
        QTimer.singleShot(0, self, self._fit_measure)

    def eventFilter(self, obj, event) -> bool:
        """The transcript's own area changed size, font or screen: a hidden chat's area is resized
        when it is shown again, and that is when its line must follow (not only a resize while it
        was visible)."""
        if self._built and obj is self.transcript.viewport() and event.type() in _REFIT_EVENTS:
            if event.type() not in (QEvent.Type.Resize, QEvent.Type.Show):
                self._measure = -1  # another font or screen: another measure, even at the same width
            self._fit_measure()
            self._restack()
            self._place_jump()
        return super().eventFilter(obj, event)

    # ---- tables that fit ---------------------------------------------------------------------------
    def _table_room(self) -> int:
        """The width a table in an answer has now (the answer's own right margin taken off)."""
        doc = self.transcript.document()
        fmt = doc.rootFrame().frameFormat()
        return int(self.transcript.viewport().width() - fmt.leftMargin() - fmt.rightMargin()
                   - 2 * doc.documentMargin() - ANSWER_MARGIN_PX - 4)

    def _needs(self, e: _Entry) -> list[int]:
        """Each table's least width with no word broken: per column, its widest word (the header's
        in bold), plus the cell's padding and borders."""
        if e.table_needs and e.table_needs[0] == e.text:
            return e.table_needs[1]
        plain_fm = self.transcript.fontMetrics()
        bold = QFont(self.transcript.font())
        bold.setBold(True)
        bold_fm = QFontMetrics(bold)
        needs = []
        for _, _, rows in find_tables(e.text):
            widths: list[int] = []
            for r, row in enumerate(rows):
                fm = bold_fm if r == 0 else plain_fm
                for c, cell in enumerate(row):
                    word = max((fm.horizontalAdvance(part) for w in stripped(cell).split()
                                for part in soft_breaks(w).split(ZWSP)), default=0)
                    widths += [0] * (c + 1 - len(widths))
                    widths[c] = max(widths[c], word)
            needs.append(sum(widths) + len(widths) * TABLE_CELL_PX + 2)
        e.table_needs = (e.text, needs)
        return needs

    def _stack_of(self, e: _Entry) -> frozenset:
        """Which of the entry's tables are drawn as lists (too wide for the room), and — "edge" — whether
        the tables that stay must be kept inside the view's edge (no margin beside the text there: Qt
        may draw a table as wide as the room one pixel past it)."""
        if e.role != "assistant" or "|" not in e.text:
            return frozenset()
        room = self._table_room()
        lists = frozenset(n for n, need in enumerate(self._needs(e)) if need > room)
        edge = self.transcript.document().rootFrame().frameFormat().rightMargin() < 2
        return lists | {"edge"} if edge and len(lists) < len(self._needs(e)) else lists

    def _restack(self) -> None:
        """The room changed: a table that no longer fits becomes a list (and back), so that no header
        breaks mid-word; the answers whose tables changed are drawn again."""
        if self._rendering:  # a resize that drawing itself caused (a scroll bar came): once it is done
            QTimer.singleShot(0, self, self._restack)
            return
        first = next((i for i, e in enumerate(self.entries) if self._stack_of(e) != e.stacked), None)
        if first is not None:
            self._render(first)

    def changeEvent(self, event) -> None:
        super().changeEvent(event)
        if self._built and event.type() in _REFIT_EVENTS:
            self._measure = -1  # another font or screen: another measure, even at the same width
            self._fit_measure()

    def _fit_measure(self) -> None:
        """At full screen the transcript keeps a line a person can read (about LINE_CHARS characters)
        and sits in the middle; in a sidebar it takes the whole width. Measured on the width the
        transcript has now, whenever that changes (see :meth:`eventFilter`)."""
        width = self.transcript.viewport().width()
        measure = self.transcript.fontMetrics().averageCharWidth() * LINE_CHARS
        side = max(0, (width - measure) // 2)
        if side == self._measure:
            return
        self._measure = side
        frame = self.transcript.document().rootFrame()
        fmt = frame.frameFormat()
        fmt.setLeftMargin(side)
        fmt.setRightMargin(side)
        frame.setFrameFormat(fmt)
        if self._at_end:
            QTimer.singleShot(0, self, self._keep_at_end)

    def _keep_at_end(self) -> None:
        if self._at_end:
            bar = self.transcript.verticalScrollBar()
            bar.setValue(bar.maximum())
        self._place_jump()

    def _want_earlier(self) -> None:
        if self._asked_earlier:
            return
        dated = [e for e in self.entries if e.message_id]
        if not dated:
            return
        self._asked_earlier = True
        oldest = min(e.ts_ms for e in dated)
        self.earlier_wanted.emit(oldest, [e.message_id for e in dated if e.ts_ms == oldest])

    def append(self, token: str) -> None:
        """A piece of the reply being streamed."""
        if self.entries and self.entries[-1].status == "streaming":
            self.entries[-1].text += token
            if not self._timer.isActive():
                self._timer.start()

    def finish(self, text: str, status: str, looked_at: list[str], error: str = "") -> None:
        entry = self.entries[-1] if self.entries and self.entries[-1].status == "streaming" else self.add("assistant", "")
        entry.text = text or entry.text
        entry.status = "" if status == "complete" else status
        entry.looked_at = looked_at
        if error and status in ("failed", "cut", "cancelled"):  # a recall answer says why in its first line
            said = plain_words(error)
            entry.text = f"*{said}*\n\n{entry.text}" if entry.text else f"*{said}*"
        self._timer.stop()
        self._render(self._index(entry))

    def show_chips(self, entry: _Entry, chips: list[Chip], noted: bool = True) -> None:
        """The settings a turn stated, under its answer (app.core.render_settings.chips: one chip per setting and
        value, each saying what it is now)."""
        if entry in self.entries:
            entry.chips, entry.chips_noted = chips, noted
            self._render(self._index(entry))

    def all_chips(self) -> list[Chip]:
        return [c for e in self.entries for c in e.chips]

    def redraw_chips(self, chips: list[Chip]) -> None:
        """Some chips say something else now (answered, or a newer value retired their "in use"):
        draw again from the first answer that has one."""
        ids = {id(c) for c in chips}
        first = next((i for i, e in enumerate(self.entries) if any(id(c) in ids for c in e.chips)), None)
        if first is not None:
            self._render(first)

    def entry_of(self, chip: Chip) -> _Entry | None:
        return next((e for e in self.entries if any(c is chip for c in e.chips)), None)

    # ---- inside ----------------------------------------------------------------------------------
    def _submit(self) -> None:
        text = self.composer.toPlainText().strip()
        if not text or self.composer.isReadOnly() or self.stop_button.isEnabled():
            return
        self.composer.clear()
        self._at_end = True  # what is sent is what the artist wants to see: the latest
        self.send.emit(text)
        self._keep_at_end()

    def _anchor(self, url: QUrl) -> None:
        target = url.toString()
        if target.startswith("copy:"):
            e, _, b = target[5:].partition(".")
            entry = self.entries[int(e)]
            QGuiApplication.clipboard().setText(entry.blocks[int(b)])
            entry.copied = int(b)  # the link says so for a moment
            self._render(int(e))
            QTimer.singleShot(COPIED_MS, self, lambda: self._uncopied(entry))  # not after the view is gone
        elif target.startswith("unfold:"):
            entry = self.entries[int(target[7:])]
            entry.unfolded = True
            self._render(int(target[7:]))
        elif target.startswith("chip:"):
            action, _, where = target[5:].partition(":")
            e, _, c = where.partition(".")
            chip = self.entries[int(e)].chips[int(c)]
            if not chip.answerable:
                return
            if action == "menu":
                self._chip_menu(chip, target[len("chip:menu:"):])
                return
            value = ""
            if action == "correct":
                value, ok = QInputDialog.getText(self, "Correct the setting", f"{chip.label} — the right value:",
                                                 text=format_value(chip.entry.value))
                if not ok or not value.strip():
                    return
            self.chip_action.emit(action, chip, value.strip())
        elif target.startswith("earlier:"):
            self._want_earlier()
        elif target.startswith("look:"):
            entry = self.entries[int(target[5:])]
            entry.open = not entry.open
            self._render(int(target[5:]))

    def _chip_menu(self, chip: Chip, where: str) -> None:
        """A chip's small menu, where the pointer is: ✓ use, ✎ correct, ✗ take out."""
        if self.chip_menu is not None:
            self.chip_menu.close()
        menu = self.chip_menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        menu.destroyed.connect(lambda: setattr(self, "chip_menu", None) if self.chip_menu is menu else None)
        menu.addSection(chip.label)
        for action, words in CHIP_ACTIONS:
            menu.addAction(words, lambda a=action: self._anchor(QUrl(f"chip:{a}:{where}")))
        menu.popup(QCursor.pos())

    def _uncopied(self, entry: _Entry) -> None:
        if entry in self.entries and entry.copied >= 0:
            entry.copied = -1
            self._render(self._index(entry))

    @staticmethod
    def _chips(i: int, e: _Entry) -> str:
        """One line per setting and value, its status in words and colour (or the question it asks,
        or what the artist did and when); an open one's setting opens a small menu (✓ use, ✎
        correct, ✗ take out). The arrow is bound to the last word, so a narrow line never leaves it
        alone. An answer changes only its own line: the others stay where they were."""
        if not e.chips:
            return ""
        lines = []
        for n, chip in enumerate(e.chips):
            done = chip.answer.startswith(("used", "corrected"))
            colour = CHIP_COLOURS[IN_USE] if done else CHIP_COLOURS.get(chip.status, "#9aa0aa")
            dot = f'<span style="color:{colour}">●</span>'
            if chip.answer:
                said = f"{chip.answer} {as_read(chip.answered_ms)}".strip()
                lines.append(f'<p class="chip">{dot} {plain(chip.label)} <span class="chipst">· {plain(said)}</span></p>')
            elif not chip.answerable:
                lines.append(f'<p class="chip">{dot} {plain(chip.label)} '
                             f'<span class="chipst">· {plain(chip.question or chip.words)}</span></p>')
            else:
                lines.append(f'<p class="chip">{dot} <a class="chiplink" href="chip:menu:{i}.{n}">{plain(chip.label)}</a>'
                             f' <span class="chipst">· {plain(chip.question or chip.words)}</span>&nbsp;'
                             f'<a href="chip:menu:{i}.{n}">▾</a></p>')
        return '<div class="chips"><p class="chiphead">Settings in this turn</p>' + "".join(lines) + "</div>"

    def _html(self, i: int, e: _Entry) -> str:
        return soft_breaks(self._above(i, e) + self._body(i, e))

    def _above(self, i: int, e: _Entry) -> str:
        """What stands above an entry: the link to earlier messages (above the first), the day (above
        the first of each day)."""
        out = ""
        if i == 0 and self.more_above:
            out += '<p class="earlier"><a href="earlier:">↑ Earlier messages</a></p>'
        day = _day(e.ts_ms)
        before = next((self.entries[j].ts_ms for j in range(i - 1, -1, -1) if self.entries[j].ts_ms), 0)
        if day and (i == 0 or day != _day(before)):
            out += f'<p class="day">— {plain(day)} —</p>'
        return out

    def _body(self, i: int, e: _Entry) -> str:
        when = f' <span class="when">· {_clock(e.ts_ms)}</span>' if e.ts_ms else ""
        if e.role == "user":
            text = e.text
            fold = ""
            if len(text) > FOLD_CHARS and not e.unfolded:  # a pasted log: its start, and the rest a click away
                cut = text.rfind("\n", 0, FOLD_CHARS)
                text = text[:cut if cut > FOLD_CHARS // 2 else FOLD_CHARS]
                fold = (f'<p class="fold">… <a href="unfold:{i}">show all</a> '
                        f'({len(e.text):,} characters, {e.text.count(chr(10)) + 1:,} lines)</p>')
            who = plain(e.who) if e.who else "You"
            return (f'<table class="you" width="100%" cellspacing="0" cellpadding="8"><tr><td>'  # one block, one colour
                    f'<p class="who">{who}{when}</p><p>{plain(text)}</p>{fold}</td></tr></table>')
        if e.role == "notice":
            return f'<p class="notice">{plain(e.text)}</p>'
        e.stacked = self._stack_of(e)
        lists = {n for n in e.stacked if n != "edge"}
        text = stacked(e.text, lists) if lists else e.text
        text, end = reply_end(text) if e.status in ("cancelled", "cut", "failed") else (text, "")
        body, e.blocks = render(text or ("…" if e.status == "streaming" else ""), prefix=f"{i}.")
        if "edge" in e.stacked:
            body = body.replace('<table border="1"', '<table width="99%" border="1"')
        if 0 <= e.copied < len(e.blocks):
            body = body.replace(f'href="copy:{i}.{e.copied}">Copy</a>', f'href="copy:{i}.{e.copied}">Copied ✓</a>')
        tag = f" · {end}" if end else {"streaming": " · writing …", "cancelled": " · stopped", "cut": " · cut off",
                                       "failed": " · no reply", "recall": " · from memory"}.get(e.status, "")
        fold = ""
        if e.looked_at:
            arrow = "▾" if e.open else "▸"
            fold = f'<p class="look"><a href="look:{i}">{arrow} What Kelvin looked at ({len(e.looked_at)})</a></p>'
            if e.open:
                fold += '<ul class="looked">' + "".join(f"<li>{plain(x)}</li>" for x in e.looked_at) + "</ul>"
        return f'<div class="kelvin"><p class="who">Kelvin{when}{tag}</p>{body}{fold}{self._chips(i, e)}</div>'

    def _render(self, first: int = 0) -> None:
        """Draw the entries from ``first`` to the end; those above it stay as they are. A few entries
        are drawn at once; many (a page written elsewhere, the whole transcript again) are drawn a
        slice of time at a time (app.ui.paced), the window answering between slices: the entries
        not drawn yet follow on the next turns of the event loop, the latest last."""
        first = max(0, min(first, len(self._starts)))  # what is not drawn yet is drawn from where it is
        if first == 0:
            self._starts = []  # a new document, from the first entry on (see _draw_one)
        elif first < len(self._starts):
            self._rendering = True
            try:
                cursor = QTextCursor(self.transcript.document())
                cursor.setPosition(self._starts[first])
                cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
                cursor.removeSelectedText()
                del self._starts[first:]
            finally:
                self._rendering = False
        self._drawing.start()

    def stop_drawing(self) -> None:
        """The window is closing for good: no more drawing on later turns of the event loop (a page that
        arrived with the workers' last signals would otherwise go on being laid into a closed window)."""
        self._drawing.cancel()
        self._timer.stop()
        self._then.clear()

    @property
    def drawing(self) -> bool:
        """Entries are still to be drawn (on the event loop's next turns)."""
        return self._drawing.busy

    def when_drawn(self, then) -> None:
        """Run ``then`` once every entry is in the document (at once if they are)."""
        if self._drawing.busy:
            self._then.append(then)
        else:
            then()

    def _draw_one(self) -> bool:
        """The next entry not yet in the document goes in at its end; True while more remain."""
        self._rendering = True
        try:
            at_end = self._at_end
            if not self._starts:
                self.transcript.setHtml(self._html(0, self.entries[0]) if self.entries
                                        else f'<div class="hello">{HELLO}</div>')
                self._measure = -1  # a new document: its margins are set again
                self._fit_measure()
                self._starts = [0] if self.entries else []
            else:
                cursor = QTextCursor(self.transcript.document())
                cursor.movePosition(QTextCursor.MoveOperation.End)
                self._starts.append(cursor.position())
                i = len(self._starts) - 1
                cursor.insertFragment(self._fragment(self._html(i, self.entries[i])))
            if at_end:
                bar = self.transcript.verticalScrollBar()
                bar.setValue(bar.maximum())
            return len(self._starts) < len(self.entries)
        finally:
            self._rendering = False

    def _drawn(self) -> None:
        self._place_jump()
        then, self._then = self._then, []
        for fn in then:
            fn()

    def _fragment(self, html: str):
        """An entry as a fragment that starts with a block break, so that its first paragraph keeps
        its own format when it goes in after the entry above (``insertHtml`` would merge it)."""
        self._scratch.setHtml("<p>-</p>" + html)
        cursor = QTextCursor(self._scratch)
        cursor.setPosition(1)  # after the "-": the break that starts the entry comes next
        cursor.movePosition(QTextCursor.MoveOperation.End, QTextCursor.MoveMode.KeepAnchor)
        return cursor.selection()

    def _index(self, entry: _Entry) -> int:
        return next((i for i, e in enumerate(self.entries) if e is entry), 0)


def _history_entry(m, extras: dict | None = None) -> _Entry:
    """A stored message as the transcript shows it (app.core.records.Message), with what its answer
    looked at and its chips (``extras``: by message id, (lines, chips, noted))."""
    role = m.role if m.role in ("user", "assistant") else "notice"
    who = m.speaker if role == "user" and m.speaker and m.speaker.lower() not in ("you", "user") else ""
    looked, chips, noted = (extras or {}).get(m.id, ([], [], True))
    return _Entry(role, m.text, m.status if role == "assistant" else "", looked_at=list(looked), chips=list(chips),
                  chips_noted=noted, ts_ms=m.ts_ms, message_id=m.id, who=who, turn_id=m.turn_id)
