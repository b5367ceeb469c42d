"""Messages older than a domain file's last block (an earlier day imported, a teammate's message
pulled late, a store whose newest blocks are dated ahead) go in their place by minute — and only the
blocks after that place are read again: the file comes out exactly as a merge of every block would
make it, and what stands before the place is left byte for byte."""
from __future__ import annotations

import random
import re

from app.core.records import Message
from app.memory.markdown import _BLOCK, MarkdownBook, render_block

BASE = 1_764_000_000_000
MINUTE = 60_000


def _msg(i: int, minute: int) -> Message:
    return Message(id=f"m{i:04d}", project="p", conversation_id="c", role="user", speaker="",
                   text=f"note {i}: GI clamp {i % 30}", ts_ms=BASE + minute * MINUTE + i)


def _merged_in_full(text: str, new: list[Message]) -> str:
    """The file as merging every block gives it: the head, then all blocks by minute, stable."""
    head = text[:text.index("<!-- kelvin:begin ")]
    minute = re.compile(r"### (\d{4}-\d\d-\d\d \d\d:\d\d)")
    blocks = [b.group(0) for b in _BLOCK.finditer(text)] + [render_block(m) for m in new]
    return head + "".join(sorted(blocks, key=lambda b: minute.search(b).group(1)))


def test_late_messages_go_in_their_place_and_the_file_is_what_a_full_merge_makes(tmp_path):
    rng = random.Random(5)
    book = MarkdownBook(tmp_path, "p")
    book.append([_msg(i, 2 * i) for i in range(200)])  # one block every two minutes
    path = book.path("general")
    n = 200
    for _ in range(25):
        late = [_msg(n + k, rng.choice((rng.randint(0, 420), rng.randint(380, 400), 0, 399)))
                for k in range(rng.randint(1, 6))]
        n += len(late)
        before = path.read_text(encoding="utf-8")
        expected = _merged_in_full(before, late)
        book.append(late)
        after = path.read_text(encoding="utf-8")
        assert after == expected
        earliest = min(render_block(m).split("\n")[1][4:20] for m in late)
        kept = before[:before.index(f"### {earliest}")] if f"### {earliest}" in before else ""
        assert after.startswith(kept)
    assert len(list(_BLOCK.finditer(path.read_text(encoding="utf-8")))) == n


def test_a_late_message_before_every_block_leaves_a_half_written_one_to_the_mending(tmp_path):
    book = MarkdownBook(tmp_path, "p")
    book.append([_msg(i, 10 + i) for i in range(5)])
    path = book.path("general")
    with path.open("a", encoding="utf-8") as fh:
        fh.write("<!-- kelvin:begin m9999 -->\n### 2025-11-24 16:30 UTC · user")  # a crash mid-block
    book.append([_msg(50, 0)])  # before them all
    text = path.read_text(encoding="utf-8")
    ids = [b.group("id") for b in _BLOCK.finditer(text)]
    assert ids == ["m0050", "m0000", "m0001", "m0002", "m0003", "m0004"]
    assert text.startswith("# General — p\n")
    assert text.endswith("<!-- kelvin:begin m9999 -->\n### 2025-11-24 16:30 UTC · user")  # left for the mending
    assert "m9999" not in book.ids_present()  # which takes it out
    assert "m9999" not in path.read_text(encoding="utf-8")
    book.append([_msg(51, 12)])  # in the middle
    ids = [b.group("id") for b in _BLOCK.finditer(path.read_text(encoding="utf-8"))]
    assert ids == ["m0050", "m0000", "m0001", "m0002", "m0051", "m0003", "m0004"]
