"""The ledger's last check before it states a value (issue 30, ``trust.py``): a decided value the
trust model doubts is asked about, never asserted; the artist's own values are never doubted; one
object said two ways ("hero", "heroes", "hero stills") is one scope."""
from __future__ import annotations

import json

from PySide6.QtCore import Qt

from app import resources
from app.core.render_settings.ledger import Entry, Ledger
from app.core.render_settings.mentions import APPLIED, PROPOSED
from app.core.render_settings.trust import TrustModel, features
from app.services.memory import load_trust


def entry(n: int, value, status=APPLIED, *, scope="", by="rules", confidence=1.0, param="brute_force_rays") -> Entry:
    return Entry(id=f"{n}.0", engine="redshift", parameter=param, value=value, unit="", status=status, ts_ms=n * 1000,
                 source_id=f"m{n}", name="Brute-force rays", by=by, order=n, scope=scope, confidence=confidence)


# a model that doubts exactly one thing: a decision with a later proposal of another value
DOUBTS_LATER_PROPOSALS = TrustModel(weights={"bias": 3.0, "later_proposals:1": -6.0}, threshold=0.5)


def test_a_doubted_decision_is_asked_about_not_stated():
    led = Ledger(DOUBTS_LATER_PROPOSALS)
    led.add(entry(1, 256))
    assert not led.current("redshift", "brute_force_rays").unsure  # nothing after it: stated
    led.add(entry(2, 128, PROPOSED))  # "you could drop it to 128" — and an answer no rule read
    cur = led.current("redshift", "brute_force_rays")
    assert cur.unsure and cur.doubted and cur.decision.value == 256
    assert cur.question == "Still 256 for brute-force rays?"
    assert cur.to_json()["to_confirm"]["choices"] == [256]
    from app.services.settings_ledger import describe, value_text

    assert describe(cur).startswith("Redshift Brute-force rays = 256 — to confirm (set ") and "still holds" in describe(cur)
    assert value_text(cur) == "256 — to confirm"
    led.add(entry(3, 128))  # the artist says it: a new decision, nothing after it
    assert not led.current("redshift", "brute_force_rays").unsure
    assert led.current("redshift", "brute_force_rays").decision.value == 128


def test_what_the_artist_set_by_hand_is_never_doubted():
    led = Ledger(DOUBTS_LATER_PROPOSALS)
    led.add(entry(1, 256, by="artist"))
    led.add(entry(2, 128, PROPOSED))
    assert not led.current("redshift", "brute_force_rays").unsure


def test_a_change_on_another_light_asks_again_about_this_one():
    """The answer for one scope depends on its siblings: adding to one light re-reads the other."""
    model = TrustModel(weights={"bias": 3.0, "sibling_later:True": -6.0}, threshold=0.5)
    led = Ledger(model)
    led.add(entry(1, 5600, scope="key", param="light_temperature"))
    assert not led.current("redshift", "light_temperature", "key").unsure
    led.add(entry(2, 1900, scope="fireplace", param="light_temperature"))
    assert led.current("redshift", "light_temperature", "key").unsure  # (cached answer dropped)
    assert not led.current("redshift", "light_temperature", "fireplace").unsure


def test_one_object_said_two_ways_is_one_scope():
    led = Ledger()
    led.add(entry(1, "3840x2160", scope="hero", param="resolution"))
    led.add(entry(2, "4096x2304", scope="heroes", param="resolution"))
    led.add(entry(3, 1.0, scope="hero stills", param="exposure"))
    led.add(entry(4, 3000, scope="left strip", param="light_temperature"))
    led.add(entry(5, 3200, scope="right strip", param="light_temperature"))
    assert sorted(led.keys()) == [("redshift", "exposure", "hero"), ("redshift", "light_temperature", "left strip"),
                                  ("redshift", "light_temperature", "right strip"), ("redshift", "resolution", "hero")]
    assert led.current("redshift", "resolution", "Heroes").decision.value == "4096x2304"
    assert led.object("hero stills") == "hero" and led.object("glass") == "glass"


def test_how_a_value_was_read_is_journaled_and_read_back():
    e = Entry(id="7.1", engine="octane", parameter="gi_clamp", value=10, unit="", status=APPLIED, ts_ms=1,
              confidence=0.71234, confirmed=True, restore=True)
    d = e.to_json()
    assert d["confidence"] == 0.712 and d["confirmed"] is True and "before" not in d
    back = Entry.from_json(json.loads(json.dumps(d)))
    assert (back.confidence, back.confirmed, back.restore, back.before) == (0.712, True, True, False)
    assert "confidence" not in Entry.from_json({"id": "1", "parameter": "x", "status": APPLIED, "ts_ms": 1}).to_json()
    assert Entry.from_json({"id": "1", "parameter": "x", "status": APPLIED, "ts_ms": 1, "confidence": "junk"}).confidence == 1.0


def test_the_shipped_trust_model_reads_and_knows_its_features():
    model = load_trust()
    assert model is not None and 0.0 < model.threshold < 1.0
    shipped = json.loads(resources.read_text("trust_model.json"))
    assert "bench/train_trust.py" in shipped["about"] and shipped["rows"] > 500
    # every feature the ledger can produce for a plain decision has a name the model was trained with
    plain = features(entry(1, 256, confidence=0.97), [entry(1, 256, confidence=0.97)], {}, 0)
    assert sum(f in model.weights for f in plain) >= len(plain) - 2
    assert model.probability(plain) > model.probability(
        features(entry(1, 256, confidence=0.61), [entry(1, 256, confidence=0.61), entry(2, 128, PROPOSED),
                                                  entry(3, 64, PROPOSED)], {}, 2))


def test_an_object_named_once_scopes_what_is_said_for_it_later(make_service):
    """"for the turntable you could drop max samples to 1500" once the turntable is an object of the
    conversation: the turntable's value, not a render-wide one that would replace the hero's."""
    from app.services.settings_ledger import SettingsLedger

    svc = make_service()
    turns = [("user", "Octane in C4D, a watch spot. Hero frames at 3840x2160, the turntable at 1920x1080."),
             ("user", "Max samples 5000 on the hero frames."),
             ("assistant", "For the turntable you could drop max samples to 1500."),
             ("user", "Done.")]
    for i, (role, text) in enumerate(turns):
        svc.commit(text, role=role, project="watch", conversation_id="c1", ts_ms=1_763_800_000_000 + i * 60_000)
    svc.flush()
    now = {(c.entry.parameter, c.entry.scope): c for c in SettingsLedger(svc).current("watch")}
    assert now[("max_samples", "hero")].decision.value == 5000
    assert now[("max_samples", "turntable")].decision.value == 1500
    assert ("max_samples", "") not in now


def test_an_answer_that_does_not_choose_between_options_leaves_the_setting_to_confirm(make_service):
    """"1024 or 4096?" — "went with what you said": the ledger cannot know which, so it asks; it never
    goes on stating the old 2000. "second one." chooses."""
    from app.services.settings_ledger import SettingsLedger, question

    svc = make_service()
    offer = "You could go to 1024 or 4096 max samples."
    for project, answer in (("vague", "went with what you said"), ("chosen", "second one.")):
        turns = [("user", "Octane in C4D, max samples 2000."), ("assistant", offer), ("user", answer)]
        for i, (role, text) in enumerate(turns):
            svc.commit(text, role=role, project=project, conversation_id="c1", ts_ms=1_763_800_000_000 + i * 60_000)
    svc.flush()
    ledger = SettingsLedger(svc)
    vague = next(c for c in ledger.current("vague") if c.entry.parameter == "max_samples")
    assert vague.unsure and sorted(a.value for a in vague.alternatives) == [1024, 2000, 4096]
    assert question(vague) == "1024 or 4096 or 2000 for max samples?"
    chosen = next(c for c in ledger.current("chosen") if c.entry.parameter == "max_samples")
    if chosen.unsure:  # the status model was not sure of the pick: it asks about the one picked, never states 2000
        assert question(chosen) == "4096 or 2000 for max samples?"
    else:
        assert chosen.decision.value == 4096


def test_the_settings_tab_asks_about_a_doubted_decision_and_takes_the_artist_s_answer(qtbot):
    """A real SettingsPanel on a ledger whose trust model doubts the decision: the row says "256 — to
    confirm", its tooltip asks "Still 256 …?", and typing 256 there is the artist's answer (set by hand)."""
    from app.ui.settings_view import VALUE_COLUMN, SettingsPanel

    led = Ledger(DOUBTS_LATER_PROPOSALS)
    led.add(entry(1, 256))
    led.add(entry(2, 128, PROPOSED))
    panel = SettingsPanel()
    qtbot.addWidget(panel)
    panel.resize(900, 400)
    panel.show()
    qtbot.waitExposed(panel)
    panel.show_current(led.currents())
    index = panel.current.index(0, VALUE_COLUMN)
    assert index.data() == "256 — to confirm"
    assert index.data(Qt.ItemDataRole.ToolTipRole) == "To confirm: Still 256 for brute-force rays? Double-click to decide."
    with qtbot.waitSignal(panel.current.set_requested, timeout=2_000) as asked:
        panel.current.setData(index, "256")
    assert asked.args == [("redshift", "brute_force_rays", ""), "256"]
