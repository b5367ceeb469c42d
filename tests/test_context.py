"""The window each turn: token estimates, packing against the budget, notes, recall answers, commands."""
from __future__ import annotations

import pytest

from app.core import commands, tools
from app.core.commands import CommandError, Mode
from app.core.context import Budget, Ingredients, distinct, note_for, pack
from app.core.recall import recall_answer
from app.core.records import Memory, Message, RecordError, Tags
from app.core.tokens import Calibration, clip, estimate, estimate_messages

T0 = 1_763_800_000_000


def msg(i: int, text: str, role: str = "user", turn: str | None = None, domain: str = "lighting") -> Message:
    return Message(id=f"m_{i}", project="p", conversation_id="c", role=role, speaker="", text=text,
                   ts_ms=T0 + i * 60_000, turn_id=turn or f"t_{i // 2}", tags=Tags(domain=domain))


# ---- tokens ---------------------------------------------------------------------------------------
def test_estimate_is_close_to_four_chars_per_token_on_english():
    text = "Set the GI clamp to 10 and raise max samples to 1024 for the hero shot. " * 20
    n = estimate(text)
    assert 0.7 < n / (len(text) / 4) < 1.4


def test_estimate_counts_numbers_and_symbols_separately():
    assert estimate("1024") == 2  # "102" "4"
    assert estimate("a+b") == 3
    assert estimate("") == 0


def test_clip_cuts_at_a_word_boundary_with_a_visible_marker():
    text = " ".join(f"word{i}" for i in range(2000))
    out, cut = clip(text, 100, "the whole message is in memory as m_1")
    assert cut
    assert estimate(out) <= 100 + 5
    head, _, marker = out.partition(" […")
    assert text.startswith(head) and (len(head) == len(text) or text[len(head)] == " ")  # whole words only
    assert "more characters not shown; the whole message is in memory as m_1]" in marker
    assert clip("short text", 100) == ("short text", False)


def test_calibration_learns_the_models_ratio_and_ignores_cached_prompts():
    cal = Calibration()
    cal.observe(1000, 1300)
    assert cal.ratio == pytest.approx(1.3)
    cal.observe(1000, 1300)
    assert cal.ratio == pytest.approx(1.3)
    cal.observe(1000, 100)  # a prompt served mostly from Ollama's cache: not a measure of size
    assert cal.ratio == pytest.approx(1.3)
    cal.observe(1000, 10_000)  # absurd: clamped
    assert cal.ratio <= cal.high
    assert cal.scale(100) >= 100


# ---- packing --------------------------------------------------------------------------------------
def test_every_section_is_in_the_window_in_order():
    recent = (msg(10, "What HDRI did we use?"), msg(11, "The studio_small_03 HDRI.", "assistant"))
    ing = Ingredients(system="You are Kelvin.", question="And its rotation?", question_id="m_99",
                      brief="Forest chase: moody dusk.", settings=("Octane GI clamp = 10 (set 14:02)",),
                      memories=(Memory("k_1", "p", "Client wants warm key light", "preference", T0),),
                      recalled=(msg(2, "HDRI rotation 135 degrees looks best"),), recent=recent)
    w = pack(ing)
    system = w.messages[0]["content"]
    assert w.messages[0]["role"] == "system"
    order = [system.index(s) for s in ("You are Kelvin.", "Forest chase", "GI clamp = 10", "warm key light",
                                       "HDRI rotation 135")]
    assert order == sorted(order)
    assert [m["content"] for m in w.messages[1:3]] == [r.text for r in recent]
    assert w.messages[-1] == {"role": "user", "content": "And its rotation?"}
    assert w.recalled == (ing.recalled[0],) and w.memories == ing.memories
    assert w.total <= 8192 - Budget().answer


def test_retrieved_messages_show_date_and_domain_and_skip_what_the_window_already_has():
    recent = (msg(10, "the recent one"), msg(11, "ok", "assistant"))
    w = pack(Ingredients(system="S", question="q", question_id="m_q",
                         recalled=(msg(10, "the recent one"), msg(3, "older lighting note", domain="camera"))))
    system = w.messages[0]["content"]
    assert "older lighting note" in system and " · camera · user]" in system
    w2 = pack(Ingredients(system="S", question="q", recalled=recent[:1] + (msg(3, "older"),), recent=recent))
    assert [m.id for m in w2.recalled] == ["m_3"]


def test_memories_are_packed_best_first_until_their_share_is_used():
    long = "Octane settings discussion " * 200  # ~1k tokens each
    recalled = tuple(msg(i, f"{i}: {long}") for i in range(30))
    w = pack(Ingredients(system="S", question="q", recalled=recalled), Budget(num_ctx=4096))
    ids = [m.id for m in w.recalled]
    assert ids == [f"m_{i}" for i in range(len(ids))]  # a prefix of the ranking
    assert 1 <= len(ids) < 30
    assert w.total <= 4096 - Budget(num_ctx=4096).answer
    # the last one that went in may be clipped, with a marker saying where the rest is
    if w.clipped:
        assert w.clipped[-1] == ids[-1]
        assert "the whole message is in memory as " + ids[-1] in w.messages[0]["content"]


def test_a_huge_question_is_clipped_with_a_marker_and_the_window_holds():
    paste = "ERROR: CUDA out of memory at frame 12\n" + "log line with value 12345\n" * 20000
    w = pack(Ingredients(system="S", question=paste, question_id="m_q"))
    q = w.messages[-1]["content"]
    assert q.startswith("ERROR: CUDA out of memory")
    assert "more characters not shown; the whole message is in memory as m_q]" in q
    assert "m_q" in w.clipped
    assert w.total <= 8192 - Budget().answer


def test_overflowing_recent_turns_fold_oldest_first_into_notes():
    log_paste = "Octane render log\n" + "\n".join(f"frame {i}: 41.2 s, VRAM 10.{i % 10} GB" for i in range(3000))
    recent = (msg(0, log_paste, turn="t_a"), msg(1, "The log shows VRAM creeping up.", "assistant", "t_a"),
              msg(2, "So what now?", turn="t_b"), msg(3, "Lower the texture cache.", "assistant", "t_b"))
    w = pack(Ingredients(system="S", question="and then?", recent=recent))
    contents = [m["content"] for m in w.messages[1:-1]]
    assert w.folded == ("m_0",)
    assert contents[0].startswith("[shortened: ") and "whole message is in memory as m_0" in contents[0]
    assert "Octane render log" in contents[0]
    assert contents[1:] == [m.text for m in recent[1:]]  # the rest verbatim
    assert w.tokens["recent"] <= int((8192 - 1024) * 0.35)
    # a model-written summary is preferred when there is one
    w2 = pack(Ingredients(system="S", question="q", recent=recent, notes={"m_0": "VRAM grows 0.1 GB per frame."}))
    assert "VRAM grows 0.1 GB per frame." in w2.messages[1]["content"]


@pytest.mark.slow(seconds=6)
@pytest.mark.parametrize("ratio", [0.6, 1.0, 2.5])  # the calibration's whole range: a model's tokens per estimated one
@pytest.mark.parametrize("offered", [0, tools.SCHEMA_TOKENS])
def test_the_window_stays_under_budget_whatever_is_thrown_at_it(ratio, offered):
    big = "x " * 34_000  # 34,000 tokens: every piece alone overflows even the largest window (32,768)
    cal = Calibration(ratio=ratio, observations=1)
    for num_ctx in (1024, 2048, 8192, 32768):
        budget = Budget(num_ctx=num_ctx)
        w = pack(Ingredients(system="You are Kelvin. " * 10, question=big, brief=big, settings=("a = 1",) * 500,
                             memories=tuple(Memory(f"k_{i}", "p", f"fact {i} " + big, "fact", T0) for i in range(5)),
                             recalled=tuple(msg(i, f"message {i} " + big) for i in range(20)),
                             recent=tuple(msg(100 + i, f"turn {i} " + big, "user" if i % 2 == 0 else "assistant")
                                          for i in range(6)),
                             tools=offered),
                 budget, cal)
        sent = cal.scale(estimate_messages(w.messages)) + (cal.scale(offered) if w.tools else 0)  # what the model counts
        assert sent == w.total and sent <= num_ctx - budget.reserve, (num_ctx, sent)
        assert sent + w.num_predict <= num_ctx and w.num_predict >= budget.reserve
        assert w.tools == (0 < cal.scale(offered) <= num_ctx // 8)  # schemas only where they fit
        if num_ctx >= 8192:
            assert w.recalled and "## From earlier" in w.messages[0]["content"]  # memories still get room
    with pytest.raises(ValueError):
        Budget(num_ctx=512)


def test_the_window_holds_nothing_twice():
    brief = "## Where the project stands\nForest shot: GI clamp 10."
    question = msg(50, "What GI clamp did we settle on for the forest?")
    recent = (msg(40, "Let us look at the fog next.", "user"), msg(41, "Raise the fog density to 0.02.", "assistant"))
    recalled = (msg(1, "what GI clamp did we settle on for the forest"),  # the same question, asked before
                msg(2, "We settled on GI clamp 10 for the forest shot."),
                msg(3, "We settled on GI clamp 10 for the forest shot!"),  # the same words again
                msg(41, "Raise the fog density to 0.02.", "assistant"),  # in the last turns already
                msg(4, "Raise the fog density to 0.02"),  # ... and in other words? no: the same words
                msg(5, "Max samples 4000 on the forest."))
    memories = (Memory("k_1", "p", brief, "brief", T0), Memory("k_2", "p", "Client wants warm light", "preference", T0),
                Memory("k_3", "p", "client wants warm light.", "fact", T0))
    w = pack(Ingredients(system="You are Kelvin.", question=question.text, question_id=question.id, brief=brief,
                         memories=memories, recalled=recalled, recent=recent), Budget(num_ctx=8192))
    assert [m.id for m in w.recalled] == ["m_2", "m_5"] and [m.id for m in w.memories] == ["k_2"]
    assert w.repeats == 6
    assert w.messages[0]["content"].count("GI clamp 10 for the forest shot") == 1
    assert 0 < w.retrieved_share < 1


def test_note_keeps_numbers_and_errors():
    m = msg(5, "Here is my log\nall fine\nWARNING: texture cache 512 MB too small\nnothing here\nframe 12 took 38 s")
    note = note_for(m)
    assert "Here is my log" in note and "512 MB" in note and "38 s" in note and "nothing here" not in note


# ---- recall answers -------------------------------------------------------------------------------
def test_recall_answer_quotes_sources_with_dates_and_no_internal_ids():
    m = msg(4, "We settled on GI clamp 10 for the forest shot. The rest was chatter about lunch.")
    text = recall_answer("what GI clamp?", reason="Recall mode.", settings=("Octane GI clamp = 10",),
                         memories=(Memory("k_9", "p", "Client hates noise in shadows", "preference", T0),),
                         messages=(m,))
    assert text.startswith("_Recall mode._")
    assert "- Octane GI clamp = 10" in text and "Client hates noise" in text and "k_9" not in text
    assert "> We settled on GI clamp 10" in text and "m_4" not in text  # no internal ids
    assert "(in the lighting notes)" in text and ".md" not in text  # where it is kept, in words
    assert "22 Nov 2025" in text or "21 Nov 2025" in text  # the message's date (local time), as an artist reads it


def test_recall_answer_says_so_when_nothing_matches():
    text = recall_answer("<script>alert(1)</script> xyz", reason="No model.")
    assert "Nothing in this project's memory matches" in text


# ---- commands and tools ---------------------------------------------------------------------------
def test_commands_parse():
    assert commands.parse("what about GI?") is None
    assert commands.parse("/remember client wants warm light #preference") == commands.Command(
        "remember", "client wants warm light", "preference")
    assert commands.parse("/remember renders on 2x4090").category == "fact"
    assert commands.parse("/mode CPU") == commands.Command("mode", "CPU")
    assert commands.parse("/exit").name == "quit"
    assert commands.parse("/tmp/render.exr is black") is None  # a path, not a command
    assert commands.parse("//remember is a word") is None
    assert commands.unescape("//remember is a word") == "/remember is a word"
    for bad in ("/mode turbo", "/remember", "/forget", "/bogus", "/rename"):
        with pytest.raises(CommandError):
            commands.parse(bad)
    assert Mode.parse(" Recall ") is Mode.RECALL


def test_tool_calls_are_checked_strictly():
    assert tools.check_call("save_to_model_memory", {"text": " likes ACES ", "category": "preference"}) == \
        tools.Save("likes ACES", "preference")
    assert tools.check_call("recall", {"query": "GI clamp"}) == tools.Recall("GI clamp")
    for name, args in (("save_to_model_memory", {"text": ""}), ("save_to_model_memory", "text"),
                       ("save_to_model_memory", {"text": "x" * 5000}), ("rm_rf", {}), ("recall", {"query": 3})):
        with pytest.raises(RecordError):
            tools.check_call(name, args)
    names = [s["function"]["name"] for s in tools.SCHEMAS]
    assert names == ["save_to_model_memory", "recall"]


def test_near_duplicates_are_one_fact_in_the_window():
    """Issue 31: the same words up to numbers and dates, the same question another day, a similar answer."""
    from app.core.context import Seen, gist

    assert gist("What GI clamp did we use on Monday, 24 Nov?") == gist("what GI clamp did we use on tuesday 25 nov")
    seen = Seen(["What GI clamp did we settle on for the glass?"])
    assert seen.repeats("What GI clamp did we settle on for the glass, Friday?")
    assert seen.repeats("what gi clamp did we settle on for the glass on 2026-11-24")
    seen.add("I see no decision on the GI clamp for the glass yet; the last value mentioned was 20.")
    assert seen.repeats("I see no decision on the GI clamp for the glass; the last value mentioned was 24.")
    assert not seen.repeats("Decision: GI clamp 10 on the glass, final for the hero frames.")
    assert not seen.repeats("ok")  # short texts repeat only in the same words
    assert not Seen(["ok, thanks"]).repeats("ok")


def test_the_window_keeps_the_best_ranked_of_near_duplicates():
    from app.core.records import Message

    msgs = [Message(id=f"m{i}", project="p", conversation_id="c", role="assistant", speaker="", ts_ms=i,
                    text=f"Render the hero at 2048 samples on day {i}; the denoiser stays on.") for i in range(4)]
    other = Message(id="x", project="p", conversation_id="c", role="user", speaker="", ts_ms=9,
                    text="The client wants the rim light warmer.")
    ing = Ingredients(system="You are Kelvin.", question="How many samples for the hero?", recalled=(*msgs, other))
    kept_memories, kept, repeats = distinct(ing)
    assert [m.id for m in kept] == ["m0", "x"] and repeats == 3


def test_the_quick_count_of_plain_text_is_the_piece_by_piece_count():
    """``estimate`` counts ASCII text with two regular expressions instead of a step per piece (a long
    paste is counted many times while a window is packed): the same number, on any text."""
    import random

    from app.core import tokens

    def piece_by_piece(text: str) -> int:
        n = 0
        for piece in tokens._PIECES.findall(text):
            if piece[0].isalpha() and len(piece) > tokens.WORD_CHARS_PER_TOKEN:
                n += 1 + (len(piece) - 1) // tokens.WORD_CHARS_PER_TOKEN
            elif piece[0].isalpha() and not piece.isascii():
                n += len(piece)
            else:
                n += 1
        return n + text.count("\n\n")

    rng = random.Random(7)
    alphabet = "abcdefghijKLMNOP 0123456789_-.,;:!?()[]{}\n\t'\"/\\@#$%^&*+=<>|~`"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 300))) for _ in range(3000)]
    texts += ["Octane GI clamp 10, max samples 2048 — the kitchen's HDRI at 1.5", "x " * 5000, "supercalifragilistic"]
    for text in texts:
        assert tokens.estimate(text) == piece_by_piece(text), repr(text)
