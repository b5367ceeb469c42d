"""Pure domain rules: records, chunking, tagging, rank fusion, project folders."""
from __future__ import annotations

import random
import tomllib

import pytest

from app import resources
from app.core import chunking
from app.core.fusion import Candidate, fuse
from app.core.projects import folder_name
from app.core.records import MAX_MESSAGE_CHARS, RecordError, check_text, format_ts, parse_ts, stable_id
from app.core.tagging import RuleTagger, Taxonomy, merge


@pytest.fixture(scope="module")
def tagger():
    return RuleTagger(Taxonomy.from_dict(tomllib.loads(resources.read_text("taxonomy.toml"))))


# ---- chunking ---------------------------------------------------------------------------------------
def test_chunks_put_back_together_exactly():
    rng = random.Random(7)
    words = ["GI", "clamp", "10.", "samples\n\n", "Octane", "kernel", "path", "tracing;", "x" * 50, "émission", "日本"]
    for _ in range(200):
        text = " ".join(rng.choice(words) for _ in range(rng.randint(1, 900)))
        parts = chunking.split(text, limit=300)
        assert "".join(parts) == text
        assert all(0 < len(p) <= 300 for p in parts)


def test_chunks_prefer_paragraph_then_sentence_boundaries():
    text = ("A" * 150 + ".\n\n") + ("B" * 100 + ". ") + "C" * 200
    parts = chunking.split(text, limit=200)
    assert parts[0].endswith("\n\n")
    assert parts[1].startswith("B")
    assert len(chunking.split("short")) == 1
    assert chunking.split("") == [""]


def test_one_very_long_word_is_cut_hard():
    parts = chunking.split("z" * 1000, limit=300)
    assert [len(p) for p in parts] == [300, 300, 300, 100]


# ---- records ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad, why", [
    ("", "empty"), ("   \n", "empty"), ("abc\x00def", "binary"), ("\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f", "binary"),
    ("x" * (MAX_MESSAGE_CHARS + 1), "characters"), ("\ud800 lone", "Unicode"), (42, "string"),
])
def test_bad_text_is_refused_with_a_reason(bad, why):
    with pytest.raises(RecordError, match=why):
        check_text(bad)


def test_html_and_script_are_kept_as_text():
    text = "<script>alert(1)</script> and <b>bold</b>"
    assert check_text(text) == text


def test_timestamps_round_trip_in_utc():
    ms = parse_ts("2026-11-20T10:00:00+01:00")
    assert format_ts(ms) == "2026-11-20T09:00:00.000Z"
    assert parse_ts("2026-11-20T09:00:00") == ms  # no zone: UTC
    with pytest.raises(RecordError, match="ISO 8601"):
        parse_ts("yesterday")


def test_stable_ids_depend_on_content_only():
    assert stable_id("p", "hello", 1) == stable_id("p", "hello", 1)
    assert stable_id("p", "hello", 1) != stable_id("p", "hello", 2)


# ---- projects ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("name, folder", [
    ("Nike Ad / Shot 010", "nike-ad-shot-010"),
    ("../../etc/passwd", "etc-passwd"),
    ("..", None), ("CON", "_con"), ("Café Crème", "cafe-creme"), ("日本のプロジェクト", None),
])
def test_project_folders_never_escape(name, folder):
    got = folder_name(name)
    if folder:
        assert got == folder
    assert "/" not in got and "\\" not in got and got not in (".", "..") and not got.startswith(".")
    assert len(got) <= 64


def test_different_names_never_share_a_folder_unless_they_differ_only_in_spelling():
    assert folder_name("Nike / Shot 010") == folder_name("nike shot 010")  # the same project, typed again
    assert folder_name("Проект А") != folder_name("Проект Б")  # no Latin spelling: kept apart
    assert folder_name("日本のプロジェクト") == folder_name("日本のプロジェクト")  # … and stable
    long_a, long_b = "Shot " + "x" * 80 + " v1", "Shot " + "x" * 80 + " v2"
    assert folder_name(long_a) != folder_name(long_b) and len(folder_name(long_a)) <= 64  # cut to fit, still apart


def test_unusable_project_names_are_refused():
    for bad in ("", "   ", "a\nb", "x" * 201):
        with pytest.raises(RecordError):
            folder_name(bad)


# ---- tagging ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, domain, kind, engine", [
    ("Set GI clamp to 10 in Octane, the fireflies are gone", "optimization", "setting", "octane"),
    ("we went with 1024 samples", "optimization", "setting", None),
    ("Redshift: unified sampling max 512 and adaptive error threshold 0.01", "optimization", "setting", "redshift"),
    ("The key light looks too harsh on her face", "lighting", "critique", None),
    ("Use a 85mm lens with f-stop 2.8 for the hero shot", "camera", "setting", None),
    ("Always render the beauty pass with cryptomatte AOVs", "compositing", "instruction", None),
    ("The roughness reads wrong because the IOR is off on the glass material", "shading", "logic", None),
    ("thanks, see you tomorrow", "general", "dialogue", None),
    ("maxsubdivs 4 on the displacement", "optimization", "setting", "vray"),
    # "key light" and "light intensity" overlap: the value still belongs to a parameter
    ("Redshift: the key light intensity 5 looks right", "lighting", "setting", "redshift"),
    ("depth of field is too strong", "camera", "critique", None),
])
def test_rule_tagger(tagger, text, domain, kind, engine):
    tags = tagger.tag(text)
    assert (tags.domain, tags.type, tags.engine) == (domain, kind, engine)


def test_artists_taxonomy_extends_the_bundled_one():
    base = tomllib.loads(resources.read_text("taxonomy.toml"))
    extra = {"engines": {"octane": {"hints": ["scatter on surface"]}}, "domains": {"lighting": {"terms": ["gobo"]}}}
    merged = merge(base, extra)
    t = RuleTagger(Taxonomy.from_dict(merged))
    assert t.tag("add a gobo in front of the window").domain == "lighting"
    assert t.tag("scatter on surface keeps crashing").engine == "octane"
    assert "light" in merged["domains"]["lighting"]["terms"]  # the bundled terms stay


# ---- fusion -----------------------------------------------------------------------------------------
def test_fusion_mixes_scaled_scores_and_a_message_counts_once():
    text = [Candidate("a", 0, "", score=9.0), Candidate("a", 0, "second chunk", score=2.0),
            Candidate("b", 0, "", score=5.0), Candidate("c", 0, "", score=1.0)]
    vec = [Candidate("b", 0, "", score=0.9), Candidate("c", 0, "", score=0.8), Candidate("a", 0, "", score=0.5)]
    fused = {f.message_id: f.score for f in fuse(text, vec)}
    # full text scaled over a, b, c: 1, 0.5, 0 (a's second chunk does not count); vectors: 0, 1, 0.75
    assert fused == pytest.approx({"a": 0.6 * 1 + 0.4 * 0, "b": 0.6 * 0.5 + 0.4 * 1, "c": 0.6 * 0 + 0.4 * 0.75})
    assert [f.message_id for f in fuse(text, vec)] == ["b", "a", "c"]  # both legs agree on b
    assert [f.message_id for f in fuse(text)] == ["a", "b", "c"]  # no vector leg: the full-text ranking
    assert fuse([Candidate("x", 0, "", score=3.0)])[0].score == 1.0  # one candidate is its leg's best
    assert fuse([], []) == []


def test_verbatim_phrase_wins_and_recency_breaks_ties():
    old = Candidate("old", 1000, "GI clamp 10 worked", score=2.0)
    new = Candidate("new", 2000, "GI clamp 10 worked", score=2.0)
    other = Candidate("other", 3000, "clamp the GI to about 10 or so", score=4.0)
    fused = fuse([other, old, new], query="GI clamp 10")
    assert [f.message_id for f in fused][:2] == ["new", "old"]  # phrase matches beat `other`; newer first
    assert fused[-1].message_id == "other"


def test_the_verbatim_bonus_needs_whole_words_and_archived_messages_count_a_little_less():
    ten = Candidate("ten", 2000, "GI clamp 10 on the glass", score=3.0)
    one = Candidate("one", 1000, "GI clamp 1 on the glass", score=1.0)
    decimal = Candidate("dec", 3000, "GI clamp 1.5 on the glass", score=2.0)
    fused = fuse([ten, decimal, one], query="GI clamp 1")
    assert fused[0].message_id == "one"
    assert {f.message_id: round(f.score, 6) for f in fused}["ten"] == 1.0  # the best score, and no bonus
    same = [Candidate("recent", 1000, "fog", score=1.0), Candidate("archived", 2000, "fog", True, score=1.0)]
    assert [f.message_id for f in fuse(same)] == ["recent", "archived"]


@pytest.mark.parametrize("text, host, priority", [
    ("In C4D with Redshift, always keep GI bounces at 3", "cinema4d", 2),
    ("Final call for the forest: octane GI clamp 10", None, 2),
    ("the rim light is too strong in the Houdini scene", "houdini", 1),
    ("Blender crashed again lol", "blender", 0),
    ("thanks, that's all for today", None, 0),
])
def test_host_app_and_priority_tags(tagger, text, host, priority):
    tags = tagger.tag(text)
    assert (tags.host_app, tags.priority) == (host, priority)


# ---- what a search matched, for the browser ------------------------------------------------------------
def test_the_words_a_search_matched_are_found_stem_and_all():
    from app.core.highlight import spans

    text = "The point cloud flickers; flickering stops with GI clamp 10, not 100. Clamped."
    got = [text[a:b] for a, b in spans(text, "what makes the cloud flicker at GI clamp 10?")]
    assert got == ["cloud", "flickers", "flickering", "GI", "clamp", "10", "Clamped"]  # not "The", not "100"
    assert spans("nothing here", "the of and") == [] and spans("", "flicker") == []
