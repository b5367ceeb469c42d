"""The extractor's phrase book (issue 35): the words the rules look for are data in
``resources/phrases/*.toml``, each list with its job, no word twice in a list, every list read by the
rules — and the rules really read them (a word added to a file changes what a message says)."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from app import resources
from app.core.render_settings import cues as cues_module
from app.core.render_settings import extraction
from app.core.render_settings.cues import FILES, Cues, CuesError
from app.core.render_settings.extraction import Context, Extractor
from app.services.memory import load_extractor

PHRASES = Path(__file__).resolve().parent.parent / "resources" / "phrases"


def _files() -> dict[str, dict]:
    return {name: tomllib.loads(resources.read_text(f"phrases/{name}.toml")) for name in FILES}


@pytest.fixture(scope="module")
def shipped():
    extractor = load_extractor()
    extractor.status_model = None  # the rules' own reading
    return extractor


def test_every_phrase_file_is_shipped_and_every_list_says_its_job_with_no_word_twice():
    assert sorted(p.stem for p in PHRASES.glob("*.toml")) == sorted(FILES)
    for name, tables in _files().items():
        assert tables, name
        for key, table in tables.items():
            assert len(table["job"].split()) >= 4, f"{name}.toml [{key}]: say what the words do"
            words = table["words"]
            if isinstance(words, list):
                assert words and len(words) == len(set(words)), f"{name}.toml [{key}] holds a word twice"
                assert all(w == w.lower() for w in words), f"{name}.toml [{key}]: the rules read lower case"


def test_every_list_is_read_by_the_rules():
    """A list nobody reads would be a promise the rules do not keep."""
    code = Path(extraction.__file__).read_text(encoding="utf-8") + Path(cues_module.__file__).read_text(encoding="utf-8")
    unread = [f"{name}.toml [{key}]" for name, tables in _files().items() for key in tables
              if not re.search(rf"\bcues\.{key}(?:_re)?\b|t\[\"{key}\"\]", code)]
    assert unread == []


def test_a_word_added_to_a_file_changes_what_a_message_says(shipped):
    said = "Tried GI clamp 8, it was meh"
    before, _ = shipped.extract(said, "user", Context(engine="octane"))
    assert [(m.parameter, m.value, m.status) for m in before] == [("gi_clamp", 8, "applied")]
    files = _files()
    files["turned_down"]["down_words"]["words"].append("meh")
    after, _ = Extractor(shipped.cat, Cues.from_files(files)).extract(said, "user", Context(engine="octane"))
    assert [(m.parameter, m.value, m.status) for m in after] == [("gi_clamp", 8, "rejected")]


@pytest.mark.parametrize("spoil, told", [
    (lambda f: f.pop("switches"), "the phrase file switches.toml is missing"),
    (lambda f: f["status"]["proposal"].pop("job"), "status.toml: [proposal] needs a job and its words"),
    (lambda f: f["things"].update(proposal={"job": "twice over", "words": ["x"]}),
     "things.toml: [proposal] is already a table of another file"),
    (lambda f: f["answers"]["ordinals"].update(words={"first": "one"}), "the phrase files are not what the rules read"),
])
def test_a_spoiled_phrase_file_is_told_in_one_sentence(spoil, told):
    files = _files()
    spoil(files)
    with pytest.raises(CuesError) as caught:
        Cues.from_files(files)
    assert str(caught.value).startswith(told)
