"""The terminal chat's prompt: line editing, history per project on disk, Ctrl+C and Ctrl+D — driven
through prompt_toolkit's own pipe input, as a terminal would send the keys."""
from __future__ import annotations

import pytest

pytest.importorskip("prompt_toolkit")
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from app.cli import terminal
from app.cli.chat_prompt import HISTORY_FILE, line_reader, session
from app.durable import UnsafePath
from app.services.conversation import Conversation

LEFT, UP, ENTER, CTRL_C, CTRL_D = "\x1b[D", "\x1b[A", "\r", "\x03", "\x04"


def ask(history, keys: str) -> str:
    with create_pipe_input() as inp:
        inp.send_text(keys)
        return session(history, input=inp, output=DummyOutput()).prompt("you ▸ ")


def test_arrows_edit_the_line_instead_of_landing_in_the_question(tmp_path):
    assert ask(tmp_path / HISTORY_FILE, "abc" + LEFT + LEFT + "X" + ENTER) == "aXbc"


def test_history_is_kept_on_disk_per_project(tmp_path):
    nike, forest = tmp_path / "nike", tmp_path / "forest"
    nike.mkdir(), forest.mkdir()
    ask(nike / HISTORY_FILE, "GI clamp for the sole?" + ENTER)
    assert ask(nike / HISTORY_FILE, UP + ENTER) == "GI clamp for the sole?"  # a new session: read from disk
    assert ask(forest / HISTORY_FILE, UP + ENTER) == ""  # another project's history is its own


def test_ctrl_c_at_the_prompt_clears_the_line_and_ctrl_d_leaves(tmp_path):
    with pytest.raises(KeyboardInterrupt):
        ask(tmp_path / HISTORY_FILE, "half a quest" + CTRL_C)
    with pytest.raises(EOFError):
        ask(tmp_path / HISTORY_FILE, CTRL_D)


def test_a_history_file_that_is_a_link_is_refused(tmp_path):
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("keep me", encoding="utf-8")
    project = tmp_path / "p"
    project.mkdir()
    (project / HISTORY_FILE).symlink_to(outside)
    with pytest.raises(UnsafePath):
        ask(project / HISTORY_FILE, "x" + ENTER)
    assert outside.read_text(encoding="utf-8") == "keep me"


def test_the_chat_loop_goes_on_after_ctrl_c_at_the_prompt(make_service, capsys):
    svc = make_service(ollama_host="http://127.0.0.1:9")
    conv = Conversation(svc.settings, svc)
    said = iter([KeyboardInterrupt(), KeyboardInterrupt(), "/quit"])
    asked = []

    def read(prompt: str) -> str:
        asked.append(prompt)
        nxt = next(said)
        if isinstance(nxt, BaseException):
            raise nxt
        return nxt

    try:
        assert terminal.chat_loop(conv, read) == 0
    finally:
        conv.close()
    assert len(asked) == 3  # two Ctrl+C cleared the line; /quit left


def test_a_chat_whose_input_is_a_pipe_reads_plain_lines(make_service):
    svc = make_service()
    conv = Conversation(svc.settings, svc)
    try:
        assert line_reader(conv, interactive=False) is input
    finally:
        conv.close()
