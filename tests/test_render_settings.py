"""Settings intelligence: parameters and values, rule extraction with context, the ledger's rules."""
from __future__ import annotations

import pytest

from app.core.render_settings.extraction import APPLIED, PROPOSED, REJECTED, Context, Extractor
from app.core.render_settings.ledger import UNSET, Entry, Ledger, fold
from app.core.render_settings.parameters import Catalogue, parse_number, parse_value, specs_from_dict
from app.services.memory import load_cues
from tests.support.ledger_session import SESSION, commit_session

TAXONOMY = {
    "params": {
        "octane": {
            "gi_clamp": {"name": "GI clamp", "domain": "optimization", "kind": "number",
                         "synonyms": ["gi clamp", "gi clamping", "clamp"]},
            "max_samples": {"name": "Max samples", "domain": "optimization", "kind": "int", "min": 1,
                            "synonyms": ["max samples", "samples", "spp"]},
            "diffuse_depth": {"name": "Diffuse depth", "domain": "optimization", "kind": "int",
                              "synonyms": ["diffuse depth"]},
            "kernel": {"name": "Kernel", "domain": "optimization", "kind": "enum", "synonyms": ["kernel"],
                       "values": {"path_tracing": ["path tracing", "pt"], "direct_lighting": ["direct lighting", "dl"]}},
            "adaptive_sampling": {"name": "Adaptive sampling", "domain": "optimization", "kind": "bool",
                                  "synonyms": ["adaptive sampling"]},
        },
        "redshift": {
            "unified_samples_max": {"name": "Unified samples max", "domain": "optimization", "kind": "int",
                                    "synonyms": ["samples max", "max samples", "samples"]},
            "gi_bounces": {"name": "GI bounces", "domain": "optimization", "kind": "int",
                           "synonyms": ["gi bounces", "num gi bounces", "bounces"]},
        },
        "any": {
            "focal_length": {"name": "Focal length", "domain": "camera", "kind": "number", "unit": "mm",
                             "units": ["mm"], "synonyms": ["focal length", "lens"]},
            "f_stop": {"name": "F-stop", "domain": "camera", "kind": "number", "synonyms": ["f-stop", "fstop", "f stop"]},
            "white_balance": {"name": "White balance", "domain": "camera", "kind": "number", "unit": "K",
                              "units": ["k", "kelvin"], "synonyms": ["white balance", "wb"]},
            "resolution": {"name": "Resolution", "domain": "general", "kind": "resolution", "unit": "px",
                           "synonyms": ["resolution", "res"]},
        },
    },
}
ENGINES = {"octane": ("octane",), "redshift": ("redshift", "rs")}


@pytest.fixture(scope="module")
def ex():
    return Extractor(Catalogue(specs_from_dict(TAXONOMY), ENGINES), load_cues())


def said(ex, *lines):
    """Run messages through the extractor in order; (role, text) or text (the artist)."""
    ctx, out = Context(), []
    for line in lines:
        role, text = line if isinstance(line, tuple) else ("user", line)
        got, ctx = ex.extract(text, role, ctx)
        out.append([(m.engine, m.parameter, m.value, m.unit, m.status) for m in got])
    return out


def test_numbers_are_read_the_way_artists_write_them():
    assert parse_number("1,024").value == 1024 and parse_number("0,5").value == 0.5
    assert parse_number("2k").unit == "k" and parse_number("35mm").unit == "mm"
    assert parse_number("2024.1.2") is None  # a version, not a value
    specs = {s.key: s for s in specs_from_dict(TAXONOMY)}
    assert parse_value(specs["max_samples"], "2k") == (2048, "")  # 1k, 2k, 4k samples are powers of two
    assert parse_value(specs["max_samples"], "16k") == (16000, "")
    assert parse_value(specs["kernel"], "Path Tracing") == ("path_tracing", "")
    assert parse_value(specs["adaptive_sampling"], "off") == (False, "")
    with pytest.raises(ValueError, match="whole number"):
        parse_value(specs["max_samples"], "10.5")


def test_applied_proposed_and_rejected(ex):
    assert said(ex, "Set GI clamp to 10 in Octane") == [[("octane", "gi_clamp", 10, "", APPLIED)]]
    assert said(ex, "octane: we went with 1024 samples") == [[("octane", "max_samples", 1024, "", APPLIED)]]
    assert said(ex, ("assistant", "In Octane you could lower the GI clamp to 5.")) == [
        [("octane", "gi_clamp", 5, "", PROPOSED)]]
    assert said(ex, "Octane again. maybe try a GI clamp of 8?") == [[("octane", "gi_clamp", 8, "", PROPOSED)]]


def test_context_gives_bare_values_their_parameter(ex):
    got = said(ex, "Octane today, GI clamp 25", ("assistant", "Try a diffuse depth of 4 to save time."),
               "ok, using 4", "that didn't help, back to 25")
    assert got[1] == [("octane", "diffuse_depth", 4, "", PROPOSED)]
    assert got[2] == [("octane", "diffuse_depth", 4, "", APPLIED)]
    assert ("octane", "diffuse_depth", None, "", REJECTED) in got[3]


def test_units_enums_booleans_and_engines(ex):
    got = said(ex, "Redshift: num gi bounces 3, samples max 512", "a 35mm lens at f/2.8, wb 5600K, 1920x1080",
               "octane: switch the kernel to path tracing and turn off adaptive sampling")
    assert got[0] == [("redshift", "gi_bounces", 3, "", APPLIED), ("redshift", "unified_samples_max", 512, "", APPLIED)]
    assert sorted(got[1]) == sorted([("", "focal_length", 35, "mm", APPLIED), ("", "f_stop", 2.8, "", APPLIED),
                                     ("", "white_balance", 5600, "K", APPLIED), ("", "resolution", "1920x1080", "px", APPLIED)])
    assert got[2] == [("octane", "kernel", "path_tracing", "", APPLIED), ("octane", "adaptive_sampling", False, "", APPLIED)]


def test_numbers_that_are_not_settings_are_left_alone(ex):
    assert said(ex, "Octane frame 120 took 14 minutes on the 4090 with 24 GB", "shot 010 v2 is out",
                "the clamp looks fine on frame 40") == [[], [], []]


def test_a_typo_still_finds_the_parameter_and_unknown_ones_are_candidates(ex):
    assert said(ex, "octane gi calmp 12") == [[("octane", "gi_clamp", 12, "", APPLIED)]]
    got = ex.extract("In Octane set the caustic blur amount to 0.3", "user", Context())[0]
    assert [(m.parameter, m.value, m.candidate) for m in got] == [("caustic_blur_amount", 0.3, True)]


def entry(i, value, status, t, by="rules"):
    return Entry(id=f"{i}.0", engine="octane", parameter="gi_clamp", value=value, unit="", status=status,
                 ts_ms=t, source_id=f"m_{i}", by=by, order=i)


def test_the_ledger_keeps_history_and_one_current_value():
    h = [entry(1, 25, APPLIED, 100), entry(2, 8, PROPOSED, 200), entry(3, 10, APPLIED, 300),
         entry(4, 12, APPLIED, 400), entry(5, None, REJECTED, 500)]
    cur = fold(h)
    assert cur.entry.value == 10 and cur.previous.value == 25  # the rejection restored 10
    assert fold(h + [entry(6, 8, REJECTED, 600)]).entry.value == 10  # rejecting a mere proposal changes nothing
    assert fold(h + [entry(7, None, REJECTED, 700), entry(8, None, REJECTED, 800)]) is None
    assert fold(h + [entry(9, 30, APPLIED, 900, by="artist")]).entry.by == "artist"
    assert fold(h + [entry(10, None, UNSET, 1000)]) is None
    assert fold(list(reversed(h))).entry.value == 10  # order of arrival does not matter, time does
    led = Ledger()
    for e in h:
        led.add(e)
    assert not led.add(h[0])  # a replay adds nothing
    led.retract(source_id="m_4")  # the message that applied 12 was deleted
    assert led.current("octane", "gi_clamp").entry.value == 25  # 10 was rejected, 25 restored


def test_retracting_takes_out_exactly_one_message_s_entries_among_many():
    led = Ledger()
    for i in range(1, 3001):  # one setting said in 3,000 messages, a second one in every tenth
        led.add(entry(i, i, APPLIED, i * 10))
        if i % 10 == 0:
            led.add(Entry(id=f"{i}.1", engine="octane", parameter="max_samples", value=i, unit="", status=APPLIED,
                          ts_ms=i * 10, source_id=f"m_{i}", order=i))
    assert [(e.parameter, e.value) for e in led.of_source("m_3000")] == [("gi_clamp", 3000), ("max_samples", 3000)]
    gone = led.retract(source_id="m_3000")  # the newest message, naming both, was deleted
    assert sorted(e.id for e in gone) == ["3000.0", "3000.1"]
    assert led.current("octane", "gi_clamp").entry.value == 2999
    assert led.current("octane", "max_samples").entry.value == 2990
    assert led.of_source("m_3000") == [] and len(led.history("octane", "gi_clamp")) == 2999
    assert [e.id for e in led.retract(entry_id="2999.0")] == ["2999.0"]  # one entry read wrong
    assert led.current("octane", "gi_clamp").entry.value == 2998
    assert led.retract(source_id="m_nowhere") == [] and led.retract(entry_id="nope") == []
    assert not led.add(entry(2999, 2999, APPLIED, 29990))  # what was taken out does not come back with a replay
    assert led.current("octane", "gi_clamp").entry.value == 2998
    led.retract(source_id="m_10")
    assert ("octane", "max_samples", "") in led.keys() and len(led) == 3000 + 300 - 5


# ---- the ledger in a project: live, imported, restarted, corrected ---------------------------------
def test_a_session_ends_with_the_right_value_and_the_whole_history(make_service):
    from app.services.settings_ledger import SettingsLedger

    svc = make_service()
    commit_session(svc)
    ledger = SettingsLedger(svc)
    [cur] = [c for c in ledger.current("forest") if c.entry.parameter == "gi_clamp"]
    assert (cur.entry.engine, cur.entry.value, cur.previous.value) == ("octane", 12, 8)
    [(key, history)] = ledger.history("gi clamp", "octane", "forest")
    assert [(e.status, e.value) for e in history] == [
        (APPLIED, 25), (PROPOSED, 8), (APPLIED, 8), (APPLIED, 12), (APPLIED, 15), (REJECTED, None), (APPLIED, 12)]
    assert "Octane GI clamp = 12" in ledger.relevant("forest", "what GI clamp are we using?")[0]
    md = (svc.store("forest").folder / "settings.md").read_text(encoding="utf-8")
    assert "| GI clamp | 12 |" in md


def test_the_ledger_survives_a_restart_and_is_rebuilt_from_the_journal(make_service):
    from app.services.settings_ledger import SettingsLedger

    svc = make_service()
    commit_session(svc)
    folder = svc.store("forest").folder
    svc.close()
    again = make_service()
    assert [c.entry.value for c in SettingsLedger(again).current("forest")] == [12]
    again.close()
    (folder / "settings.jsonl").unlink()  # lost: the journal has everything
    (folder / "settings.state.json").write_text("{garbage", encoding="utf-8")
    third = make_service()
    ledger = SettingsLedger(third)
    assert [c.entry.value for c in ledger.current("forest")] == [12]
    assert len(ledger.history("gi clamp", "octane", "forest")[0][1]) == 7


def test_an_imported_history_builds_the_same_ledger_as_a_live_one(make_service, tmp_path):
    from app.services.importer import ImportItem
    from app.core.records import Message
    from app.services.settings_ledger import SettingsLedger

    live = make_service()
    commit_session(live, project="live")
    items = [ImportItem(message=Message(id=f"m_{i}", project="imported", conversation_id="day1", role=role, speaker="",
                                        text=text, ts_ms=1_763_800_000_000 + i * 60_000), project="imported")
             for i, (role, text) in reversed(list(enumerate(SESSION)))]  # out of order in the file
    live.import_items(items)
    ledger = SettingsLedger(live)

    def state(project):
        return [(c.entry.engine, c.entry.parameter, c.entry.value, c.previous and c.previous.value)
                for c in ledger.current(project)]

    assert state("imported") == state("live") == [("octane", "gi_clamp", 12, 8)]


def test_the_artist_corrects_the_ledger_by_hand_and_deleting_a_message_takes_its_settings(make_service):
    from app.core.records import RecordError
    from app.services.settings_ledger import SettingsLedger

    svc = make_service()
    commit_session(svc)
    ledger = SettingsLedger(svc)
    entry = ledger.set("gi clamp", "10", "octane", "forest", note="client review")
    assert (entry.value, entry.by) == (10, "artist")
    assert ledger.current_of(("octane", "gi_clamp"), "forest").previous.value == 12
    with pytest.raises(RecordError, match="whole number"):
        ledger.set("max samples", "lots", "octane", "forest")
    # "max samples" is Octane's and Redshift's: without --engine, the engine the project talks about
    assert ledger.set("max samples", "512", None, "forest").key == ("octane", "max_samples", "")
    svc.commit("Lighting notes for the new look", project="fresh")
    with pytest.raises(RecordError, match="several engines"):  # a project that named no engine yet
        ledger.set("max samples", "512", None, "fresh")
    ledger.unset("max samples", None, "forest")
    ledger.unset("gi clamp", "octane", "forest")
    assert ledger.current("forest") == []
    history = ledger.history("gi clamp", "octane", "forest")[0][1]
    assert [e.status for e in history][-2:] == [APPLIED, UNSET] and history[-1].by == "artist"
    # the journal keeps the corrections: they come back after a rebuild
    svc.reindex("forest")
    assert [e.status for e in SettingsLedger(svc).history("gi clamp", "octane", "forest")[0][1]][-1] == UNSET
    msg = svc.list("forest", limit=10)[-1]  # "that made it worse, back to 12" — deleted
    svc.delete(msg.id, "forest")
    assert all(e.source_id != msg.id for e in SettingsLedger(svc).history("gi clamp", "octane", "forest")[0][1])


def test_the_artist_can_teach_kelvin_a_parameter_without_editing_code(make_service, tmp_path):
    import os

    from app.services.settings_ledger import SettingsLedger

    config = tmp_path / "config"
    config.mkdir(exist_ok=True)
    (config / "taxonomy.toml").write_text(
        '[params.octane.caustic_multiplier]\nname = "Caustic multiplier"\nkind = "number"\ndomain = "lighting"\n'
        'synonyms = ["caustic multiplier", "caustics mult"]\n', encoding="utf-8")
    assert os.environ["KELVIN_CONFIG_DIR"] == str(config)
    svc = make_service()
    svc.commit("In Octane set the caustics mult to 3", project="glass")
    svc.flush()
    [cur] = SettingsLedger(svc).current("glass")
    assert (cur.entry.parameter, cur.entry.value, cur.entry.name) == ("caustic_multiplier", 3, "Caustic multiplier")


def test_options_stay_options_until_the_artist_picks_one(ex):
    got = said(ex, "Octane interior today", ("assistant", "You could drop the GI clamp to 2 or 4."), "ok")
    assert got[1] == [("octane", "gi_clamp", 2, "", PROPOSED), ("octane", "gi_clamp", 4, "", PROPOSED)]
    # a plain "ok" does not say which: each option comes back in doubt (the ledger asks), none decided
    ctx = Context()
    for role, text in (("user", "Octane interior today"), ("assistant", "You could drop the GI clamp to 2 or 4."),
                       ("user", "ok")):
        answer, ctx = ex.extract(text, role, ctx)
    assert [(m.value, m.status, m.sure) for m in answer] == [(2, APPLIED, False), (4, APPLIED, False)]
    got = said(ex, "Octane interior today", ("assistant", "You could drop the GI clamp to 2 or 4."), "went with 4")
    assert got[2] == [("octane", "gi_clamp", 4, "", APPLIED)]
    got = said(ex, "Octane interior today", ("assistant", "Try a GI clamp of 8 and a diffuse depth of 4."),
               "I applied the first one")
    assert got[2] == [("octane", "gi_clamp", 8, "", APPLIED)]


def test_a_value_turned_down_in_passing_and_the_one_that_replaces_it(ex):
    got = said(ex, "Octane, GI clamp 25", "clamp 10, 5 was too dark", "clamp 3 looked flat, 6")
    assert got[1] == [("octane", "gi_clamp", 10, "", APPLIED), ("octane", "gi_clamp", 5, "", REJECTED)]
    assert got[2] == [("octane", "gi_clamp", 3, "", REJECTED), ("octane", "gi_clamp", 6, "", APPLIED)]


def test_a_problem_the_value_got_rid_of_does_not_turn_it_down(ex):
    assert said(ex, "Set GI clamp to 10 in Octane, the fireflies are gone.") == [[("octane", "gi_clamp", 10, "", APPLIED)]]
    assert said(ex, "Octane clamp 4, no more fireflies") == [[("octane", "gi_clamp", 4, "", APPLIED)]]
    assert said(ex, "Octane clamp 4 because of fireflies") == [[("octane", "gi_clamp", 4, "", APPLIED)]]
    # a value talked about before, then a problem: turned down; told the first time with its problem: the state
    assert said(ex, "Octane", ("assistant", "Try a GI clamp of 40."), "clamp 40, fireflies everywhere")[2] == [
        ("octane", "gi_clamp", 40, "", REJECTED)]
    assert said(ex, "Octane clamp 40, fireflies everywhere") == [[("octane", "gi_clamp", 40, "", APPLIED)]]
    assert said(ex, "Octane, I tried clamp 40, fireflies everywhere") == [[("octane", "gi_clamp", 40, "", REJECTED)]]


def test_lists_apertures_and_sizes_the_way_artists_type_them(ex):
    assert said(ex, "Redshift: 512 samples, 3 gi bounces") == [[
        ("redshift", "unified_samples_max", 512, "", APPLIED), ("redshift", "gi_bounces", 3, "", APPLIED)]]
    assert sorted(said(ex, "35mm f8, 2048 by 858 on the 3090")[0]) == sorted([
        ("", "focal_length", 35, "mm", APPLIED), ("", "f_stop", 8, "", APPLIED),
        ("", "resolution", "2048x858", "px", APPLIED)])
    assert said(ex, "Octane render on 2x 3090, shot 060 at frame 45") == [[]]


@pytest.fixture(scope="module")
def shipped():
    """The rules on the taxonomy Kelvin ships (these rules lean on its data: claims, units) — the rules
    alone: what the status model makes of their readings is tested in tests/test_ledger_newcomer.py
    and measured by bench/train_status.py."""
    from app.services.memory import load_extractor, load_taxonomy
    ex = load_extractor(load_taxonomy())
    ex.status_model = None
    return ex


def test_a_min_named_after_a_value_is_not_minutes(shipped):
    assert said(shipped, "V-Ray in Max. Max subdivs is 24, min subdivs 1, noise threshold 0.01") == [[
        ("vray", "max_subdivs", 24, "", APPLIED), ("vray", "min_subdivs", 1, "", APPLIED),
        ("vray", "noise_threshold", 0.01, "", APPLIED)]]
    assert said(shipped, "Octane, the frame took 24 min at 800 samples")[0] == [("octane", "max_samples", 800, "", APPLIED)]


def test_values_that_say_what_they_are_without_a_name(shipped):
    assert said(shipped, "Karma. The plate was shot at ISO 800 and 1/50, I matched the CG camera") == [[
        ("", "iso", 800, "", APPLIED), ("", "shutter_speed", "1/50", "s", APPLIED)]]
    assert said(shipped, "Good point, 1/48 it is.") == [[("", "shutter_speed", "1/48", "s", APPLIED)]]
    assert said(shipped, "Cycles preview, render at 1/2 res for now") == [[]]
    assert said(shipped, "I set the lamps to 2700K") == [[("", "light_temperature", 2700, "K", APPLIED)]]
    assert said(shipped, "the new white balance setting in colour management is at 5000K") == [[
        ("", "white_balance", 5000, "K", APPLIED)]]
    got = said(shipped, "So the white balance is back to 5200K and I set the key to 4500K.")[0]
    assert ("", "white_balance", 5200, "K", APPLIED) in got and ("", "light_temperature", 4500, "K", APPLIED) in got
    assert said(shipped, "Cycles, a character with 8k textures, 11gb of VRAM on a 12gb card") == [[
        ("", "texture_resolution", "8k", "", APPLIED)]]
    assert said(shipped, "The cushion textures are 4k") == [[("", "texture_resolution", "4k", "", APPLIED)]]


def test_gi_engines_said_without_their_name(shipped):
    assert said(shipped, "V-Ray. GI is irradiance map + light cache, because that's what the old scene used.") == [[
        ("vray", "gi_primary_engine", "irradiance_map", "", APPLIED),
        ("vray", "gi_secondary_engine", "light_cache", "", APPLIED)]]
    assert sorted(said(shipped, "vray 6. gi bf / lc, lc subdivs 1500")[0]) == sorted([
        ("vray", "gi_primary_engine", "brute_force", "", APPLIED),
        ("vray", "gi_secondary_engine", "light_cache", "", APPLIED),
        ("vray", "light_cache_subdivs", 1500, "", APPLIED)])
    assert said(shipped, "Redshift portrait", "nah, irradiance cache blotches on skin, I'm keeping brute force.")[1] \
        == [("redshift", "primary_gi_engine", "brute_force", "", APPLIED)]
    # a value two GI engines share needs a plain cue; the model's "with brute force on both" proposes neither
    assert said(shipped, "Redshift interior", ("assistant", "With brute force on both, 2-3 GI bounces is fine."))[1] \
        == [("redshift", "gi_bounces", (2, 3), "", PROPOSED)]
    got = said(shipped, "Cycles: we went with OIDN, OptiX flickered")[0]
    assert ("", "denoiser", "oidn", "", APPLIED) in got and ("", "denoiser", "optix", "", APPLIED) not in got


def test_changes_told_with_arrows_and_new_values(shipped):
    # the old value is history, said before the new one (bench/data/LABELLING.md): the ledger's "before"
    assert said(shipped, "Octane. Diffuse depth 8 -> 4, 18% faster.") == [[("octane", "diffuse_depth", 8, "", APPLIED),
                                                                            ("octane", "diffuse_depth", 4, "", APPLIED)]]
    assert said(shipped, "Corona", "Max ray depth 25 -> 50 on view 07")[1] == [("corona", "max_ray_depth", 25, "", APPLIED),
                                                                              ("corona", "max_ray_depth", 50, "", APPLIED)]
    got = said(shipped, "Second thought on WB: the tiles look blue-ish. Changing 6500 K → 5500 K.")[0]
    assert got == [("", "white_balance", 5500, "K", APPLIED)]
    assert said(shipped, "Octane. Threshold 0.03 is too loose. New value 0.02.")[0][-1] == \
        ("octane", "adaptive_noise_threshold", 0.02, "", APPLIED)


def test_a_state_told_in_a_question_is_the_value_in_use(shipped):
    assert said(shipped, "Octane: max samples is 16000?? i didnt change it") == [[
        ("octane", "max_samples", 16000, "", APPLIED)]]
    assert said(shipped, "Octane: should I set max samples to 800?") == [[("octane", "max_samples", 800, "", PROPOSED)]]
    assert said(shipped, "Octane: is max samples at 800 enough?") == [[("octane", "max_samples", 800, "", PROPOSED)]]
    # the model asked what a setting is; the answer names only the value
    got = said(shipped, "Karma XPU, a glass logo",
               ("assistant", "Dark glass usually means the Refraction Limit is too low. What's it set to?"),
               "It's at 2. I'd guess that's not enough for a chunky bevelled logo!")
    assert got[2] == [("karma", "refraction_limit", 2, "", APPLIED)]


def test_a_proposal_taken_by_its_name_alone(shipped):
    got = said(shipped, "Octane, a perfume bottle",
               ("assistant", "Raise max samples to 4000 and set the adaptive noise threshold to 0.02."),
               "Done on the max samples — frame 1 is now 13 minutes and I can't see a difference.")
    assert got[2] == [("octane", "max_samples", 4000, "", APPLIED)]
    got = said(shipped, "Octane, a perfume bottle", ("assistant", "Raise max samples to 4000."),
               "I tried the max samples but it made no difference")
    assert ("octane", "max_samples", 4000, "", APPLIED) not in got[2]


def test_hdri_and_render_region_said_the_short_way(shipped):
    assert said(shipped, "I added a rect light at 5 and set the dome to 1.2")[0][-1] == ("", "hdri_intensity", 1.2, "", APPLIED)
    assert said(shipped, "Render region's on - great shout, 11 secs a frame instead of 40.") == [[
        ("", "render_region", True, "", APPLIED)]]


def test_a_value_tried_and_replaced_in_the_same_message_was_turned_down(shipped):
    assert said(shipped, "Arnold skin. SSS samples = 3: blotching reduced, still visible on the ear. Moving to 4.") == [[
        ("arnold", "sss_samples", 3, "", REJECTED), ("arnold", "sss_samples", 4, "", APPLIED)]]
    assert said(shipped, "Cycles. Clamp indirect 3 dims the bounce light from the window. Compromise at 5.") == [[
        ("cycles", "clamp_indirect", 3, "", REJECTED), ("cycles", "clamp_indirect", 5, "", APPLIED)]]


def test_a_pasted_panel_names_its_entries_by_the_heading(shipped):
    got = said(shipped, "Arnold in Maya. Current:\nCamera (AA): 6\nDiffuse: 3\nRay depth: diffuse 1 / specular 1 / transmission 8")[0]
    assert got == [("arnold", "camera_aa_samples", 6, "", APPLIED), ("arnold", "diffuse_samples", 3, "", APPLIED),
                   ("arnold", "diffuse_depth", 1, "", APPLIED), ("arnold", "specular_depth", 1, "", APPLIED),
                   ("arnold", "transmission_depth", 8, "", APPLIED)]
    got = said(shipped, "Cycles. Light paths: Total 12, Diffuse 4\nClamping: Direct 0, Indirect 10\nCaustics: reflective on, refractive off")[0]
    assert got == [("cycles", "max_bounces", 12, "", APPLIED), ("cycles", "diffuse_bounces", 4, "", APPLIED),
                   ("cycles", "clamp_direct", 0, "", APPLIED), ("cycles", "clamp_indirect", 10, "", APPLIED),
                   ("cycles", "caustics_reflective", True, "", APPLIED), ("cycles", "caustics_refractive", False, "", APPLIED)]


def test_a_list_of_settings_the_way_artists_open_a_session(shipped):
    assert said(shipped, "V-Ray 6. Brute force primary, light cache secondary. Max subdivs 24, min 1.")[0] == [
        ("vray", "gi_primary_engine", "brute_force", "", APPLIED), ("vray", "gi_secondary_engine", "light_cache", "", APPLIED),
        ("vray", "max_subdivs", 24, "", APPLIED), ("vray", "min_subdivs", 1, "", APPLIED)]
    assert said(shipped, "blender cycles. 512 samples, and it take 4 min per frame")[0] == [
        ("cycles", "max_samples", 512, "", APPLIED)]
    assert said(shipped, "cycles. sample 2048, max bounce 12")[0] == [
        ("cycles", "max_samples", 2048, "", APPLIED), ("cycles", "max_bounces", 12, "", APPLIED)]
    assert said(shipped, "cycles kitchen. samples i have 1024")[0] == [("cycles", "max_samples", 1024, "", APPLIED)]
    # the card it renders on is not a value, an opening "path tracing, 3000 samples" names the kernel
    assert said(shipped, "octane. path tracing, 3000 samples, caustics look super noisy. 4090")[0] == [
        ("octane", "max_samples", 3000, "", APPLIED), ("octane", "kernel", "path_tracing", "", APPLIED)]
    assert said(shipped, "octane. white balance is 6500K", "7500 too orange. 7000")[1][-1] == ("", "white_balance", 7000, "K", APPLIED)


def test_short_forms_from_a_working_day(shipped):
    assert said(shipped, "karma. refl limit 2 done. variance mode on, noise 0.01.")[0] == [
        ("karma", "reflection_limit", 2, "", APPLIED), ("karma", "noise_level", 0.01, "", APPLIED),
        ("karma", "convergence_mode", "variance", "", APPLIED)]
    assert said(shipped, "octane. ok path tracing + 800 samples + ai denoiser")[0] == [
        ("octane", "max_samples", 800, "", APPLIED), ("", "denoiser", "octane_ai", "", APPLIED),
        ("octane", "kernel", "path_tracing", "", APPLIED)]
    assert said(shipped, "octane", "did 1500. still smeary. ok killing the ai denoiser")[1][-1] == (
        "", "denoiser", "none", "", APPLIED)
    assert said(shipped, "client wants 4096x2160 @ 23.976 for the cinema version, switched it")[0] == [
        ("", "resolution", "4096x2160", "px", APPLIED), ("", "frame_rate", 23.976, "fps", APPLIED)]
    assert said(shipped, "corona. Rerendering now with a 2:00:00 limit. Converged in 1:41:12 on view 3")[0] == [
        ("corona", "time_limit", "2:00:00", "", APPLIED)]
    assert said(shipped, "cycles. max bounce 24 now, the crystal have thickness yes, 1.2mm")[0] == [
        ("cycles", "max_bounces", 24, "", APPLIED)]
    assert said(shipped, "cycles. reflective caustic i leave off. light tree i turn on now")[0] == [
        ("cycles", "caustics_reflective", False, "", APPLIED), ("cycles", "light_tree", True, "", APPLIED)]
    # a "yes" that answered a question, then the proposal given another value: it was never taken
    assert said(shipped, "cycles", ("assistant", "You could also enable reflective caustics for the dial."),
                "ohh the world was black yes!! reflective caustics i leave off")[2] == [
        ("cycles", "caustics_reflective", False, "", APPLIED)]


def test_states_told_before_a_question_and_values_said_again(shipped):
    assert said(shipped, "cycles kitchen", "I'm on 0.01 threshold, should I go lower?")[1] == [
        ("cycles", "noise_threshold", 0.01, "", APPLIED)]
    assert said(shipped, "i set 2160x2700 because client ask, is good also for website?")[0] == [
        ("", "resolution", "2160x2700", "px", APPLIED)]
    assert said(shipped, "octane, I'm on path tracing", "should I set max samples to 800?")[1] == [
        ("octane", "max_samples", 800, "", PROPOSED)]
    assert said(shipped, "octane. parallel samples 16", "16 crashed at frame 37 lol. 8 again.")[1] == [
        ("octane", "parallel_samples", 16, "", REJECTED), ("octane", "parallel_samples", 8, "", APPLIED)]
    assert said(shipped, "f/4 turned out to be the right balance; f/5.6 made the background too busy.")[0] == [
        ("", "f_stop", 4, "", APPLIED), ("", "f_stop", 5.6, "", REJECTED)]
    assert said(shipped, "octane. added a studio strip hdri. intensity 1.5, rotation 90. key light intensity 5")[0] == [
        ("", "hdri_intensity", 1.5, "", APPLIED), ("", "hdri_rotation", 90, "°", APPLIED),
        ("", "light_intensity", 5, "", APPLIED)]


def test_ranges_of_a_min_max_pair_plans_and_past_states(shipped):
    assert said(shipped, "Redshift. In Redshift we had unified samples 16 to 512, 3 GI bounces")[0] == [
        ("redshift", "unified_samples_min", 16, "", APPLIED), ("redshift", "unified_samples_max", 512, "", APPLIED),
        ("redshift", "gi_bounces", 3, "", APPLIED)]
    assert said(shipped, "redshift. `unified 32/512 | adaptive 0.005 | MSRI 3`")[0] == [
        ("redshift", "unified_samples_min", 32, "", APPLIED), ("redshift", "unified_samples_max", 512, "", APPLIED),
        ("redshift", "adaptive_error_threshold", 0.005, "", APPLIED),
        ("redshift", "max_secondary_ray_intensity", 3, "", APPLIED)]
    assert said(shipped, "Plan: DOF on, F-Stop 2, white balance toward 4500 K. Thoughts?")[0] == [
        ("", "depth_of_field", True, "", PROPOSED), ("", "f_stop", 2, "", PROPOSED),
        ("", "white_balance", 4500, "K", PROPOSED)]
    assert said(shipped, "Octane. Out-of-core was off; I've turned it on, and AO distance at 5.")[0] == [
        ("octane", "ao_distance", 5, "", APPLIED), ("octane", "out_of_core", True, "", APPLIED)]
    assert said(shipped, "Corona. Solid glass panels, 12 mm thick, on a 35 mm lens")[0] == [
        ("", "focal_length", 35, "mm", APPLIED)]


def test_both_switches_and_plans_for_later(shipped):
    assert said(shipped, "blender cycles. Turned off both caustics and the fireflies on the glass are mostly gone.")[0] == [
        ("cycles", "caustics_reflective", False, "", APPLIED), ("cycles", "caustics_refractive", False, "", APPLIED)]
    assert said(shipped, "cycles", "the caustics i turn off both, was making noise")[1] == [
        ("cycles", "caustics_reflective", False, "", APPLIED), ("cycles", "caustics_refractive", False, "", APPLIED)]
    assert said(shipped, "redshift. unified samples min 8 max 128 for preview, final maybe 32/1024 tomorrow")[0] == [
        ("redshift", "unified_samples_min", 8, "", APPLIED), ("redshift", "unified_samples_max", 128, "", APPLIED)]
    assert said(shipped, "vray. current: bf + light cache, textures all 4k")[0] == [
        ("", "texture_resolution", "4k", "", APPLIED), ("vray", "gi_primary_engine", "brute_force", "", APPLIED),
        ("vray", "gi_secondary_engine", "light_cache", "", APPLIED)]


def test_a_value_turned_down_then_a_bare_one_that_replaces_it(shipped):
    # the replacement leads a later sentence that names nothing: it goes on with the parameter
    # this message set, and the value before it was tried and turned down
    assert said(shipped, "V-Ray. Max ray intensity 20 dulled the chrome trim. 50 is ok")[0] == [
        ("vray", "max_ray_intensity", 20, "", REJECTED), ("vray", "max_ray_intensity", 50, "", APPLIED)]
    assert said(shipped, "octane. filter size 1 made the type shimmer. 1.5 is what we ship.")[0] == [
        ("octane", "filter_size", 1, "px", REJECTED), ("octane", "filter_size", 1.5, "px", APPLIED)]
    assert said(shipped, "cycles. clamp indirect 3 makes the fog too dark, no. i put 10.")[0] == [
        ("cycles", "clamp_indirect", 3, "", REJECTED), ("cycles", "clamp_indirect", 10, "", APPLIED)]
    # the parameter named last in the message, even where its own value was told in the past
    assert said(shipped, "octane. Someone left the clamp at 1. I set it to 20. Specular depth was 5; I raised it to 8.")[0] == [
        ("octane", "gi_clamp", 1, "", REJECTED), ("octane", "gi_clamp", 20, "", APPLIED),
        ("octane", "specular_depth", 5, "", REJECTED), ("octane", "specular_depth", 8, "", APPLIED)]
    # a time, a count or a deadline that leads a sentence is not a value
    assert said(shipped, "octane. max samples 2000. 3 days left on the job")[0] == [("octane", "max_samples", 2000, "", APPLIED)]
    assert said(shipped, "octane. GI clamp 10. 2 hours a frame")[0] == [("octane", "gi_clamp", 10, "", APPLIED)]
    assert said(shipped, "redshift. unified max is down to 512 and OptiX is on; 8 and a half minutes on frame 1040.")[0] == [
        ("redshift", "unified_samples_max", 512, "", APPLIED), ("", "denoiser", "optix", "", APPLIED)]


def test_a_value_told_as_how_it_was_then_changed(shipped):
    # the value it was is given up: a rejection (of the value in force, if it is), never the current one
    assert said(shipped, "karma. pixel samples were 6, put 12, the bokeh is smooth now")[0] == [
        ("karma", "pixel_samples", 12, "", APPLIED)]
    assert said(shipped, "octane. ray epsilon was 0.0001. went 0.001 and the speckles are gone")[0] == [
        ("octane", "ray_epsilon", 0.0001, "", REJECTED), ("octane", "ray_epsilon", 0.001, "", APPLIED)]
    assert said(shipped, "cycles. the threshold was actually already at 0.005, so that's not it")[0] == [
        ("cycles", "noise_threshold", 0.005, "", APPLIED)]


def test_a_list_whose_entries_leave_out_the_shared_word(shipped):
    assert said(shipped, "karma. I've got diffuse limit 2, reflection 2, refraction 2, fine for a forest?")[0] == [
        ("karma", "diffuse_limit", 2, "", APPLIED), ("karma", "reflection_limit", 2, "", APPLIED),
        ("karma", "refraction_limit", 2, "", APPLIED)]
    got = said(shipped, "arnold. My ray depths are diffuse 1, specular 2 and transmission 4")[0]
    assert got == [("arnold", "diffuse_depth", 1, "", APPLIED), ("arnold", "specular_depth", 2, "", APPLIED),
                   ("arnold", "transmission_depth", 4, "", APPLIED)]
    assert said(shipped, "octane. diffuse depth 5, glossy 8, spec 10")[0] == [
        ("octane", "diffuse_depth", 5, "", APPLIED), ("octane", "glossy_depth", 8, "", APPLIED),
        ("octane", "specular_depth", 10, "", APPLIED)]
    # with no shared word, the short names keep their own meaning
    assert said(shipped, "Arnold in Maya. Camera AA 6, diffuse 3, specular 2")[0] == [
        ("arnold", "camera_aa_samples", 6, "", APPLIED), ("arnold", "diffuse_samples", 3, "", APPLIED),
        ("arnold", "specular_samples", 2, "", APPLIED)]


def test_enum_pairs_no_denoiser_degrees_and_kelvin_by_the_nearest_noun(shipped):
    # a GI pair said as one, with no cue: primary then secondary; the same engine twice fills both
    assert said(shipped, "vray", "done, BF + LC, ceiling is clean")[1] == [
        ("vray", "gi_primary_engine", "brute_force", "", APPLIED), ("vray", "gi_secondary_engine", "light_cache", "", APPLIED)]
    assert said(shipped, "redshift. bucket 128, GI BF+BF, 2 bounces")[0][-2:] == [
        ("redshift", "primary_gi_engine", "brute_force", "", APPLIED),
        ("redshift", "secondary_gi_engine", "brute_force", "", APPLIED)]
    assert said(shipped, "corona. Passes limit 400, noise limit 0, no denoiser.")[0][-1] == ("", "denoiser", "none", "", APPLIED)
    assert not [m for m in said(shipped, "corona. Without denoising at 2%, frame 400 took 9 minutes.")[0]
                if m[1] == "denoiser"]
    assert said(shipped, "octane. the dome's rotated 45 degrees so the streak runs along the sole") == [[
        ("", "hdri_rotation", 45, "°", APPLIED)]]
    assert said(shipped, "arnold. I rotated the key light 30 degrees") == [[]]  # a light, not the HDRI
    assert said(shipped, "corona. Chandeliers are 2700K at intensity 3, camera WB 6500.")[0] == [
        ("", "light_intensity", 3, "", APPLIED), ("", "white_balance", 6500, "K", APPLIED),
        ("", "light_temperature", 2700, "K", APPLIED)]
    got = said(shipped, "corona. Kept the chandeliers at 2400K and put the camera back to 6500K.")[0]
    assert ("", "light_temperature", 2400, "K", APPLIED) in got and ("", "white_balance", 6500, "K", APPLIED) in got


def test_confirmations_that_count_or_except_and_leaving_it_as_it_is(shipped):
    offer = ("assistant", "Set camera AA to 5, diffuse samples 2, specular samples 2 and adaptive threshold 0.015.")
    got = said(shipped, "arnold sneaker", offer, "I set everything as you listed except the specular samples.")[2]
    assert got == [("arnold", "camera_aa_samples", 5, "", APPLIED), ("arnold", "diffuse_samples", 2, "", APPLIED),
                   ("arnold", "adaptive_threshold", 0.015, "", APPLIED)]
    assert said(shipped, "arnold sneaker", offer, "Did the first two. Renders in 9 minutes now.")[2] == [
        ("arnold", "camera_aa_samples", 5, "", APPLIED), ("arnold", "diffuse_samples", 2, "", APPLIED)]
    # "leaving it" keeps what is there: the proposal is not taken
    assert said(shipped, "redshift", ("assistant", "You could raise light samples to 256."), "ok leaving it.")[2] == []


def test_an_engine_named_in_a_comparison_does_not_change_the_engine(shipped):
    got = said(shipped, "arnold sneaker", "I put the diffuse depth at 3 to match the Redshift look, camera AA 5")
    assert got[1] == [("arnold", "diffuse_depth", 3, "", APPLIED), ("arnold", "camera_aa_samples", 5, "", APPLIED)]


def test_apertures_abbreviations_and_words_another_engine_owns(shipped):
    assert said(shipped, "octane. f8 looked too flat, f5.6 is the one")[0] == [
        ("", "f_stop", 8, "", REJECTED), ("", "f_stop", 5.6, "", APPLIED)]
    assert said(shipped, "octane. fl 85 yes. f2.8.")[0] == [("", "focal_length", 85, "mm", APPLIED), ("", "f_stop", 2.8, "", APPLIED)]
    # "pt samples" is Karma's; in Octane the words are the PT kernel and the samples
    assert said(shipped, "octane. kernel pt, samples 1024, gi clamp 50, diffuse 6 spec 8 glossy 4")[0] == [
        ("octane", "kernel", "path_tracing", "", APPLIED), ("octane", "max_samples", 1024, "", APPLIED),
        ("octane", "gi_clamp", 50, "", APPLIED), ("octane", "diffuse_depth", 6, "", APPLIED),
        ("octane", "specular_depth", 8, "", APPLIED), ("octane", "glossy_depth", 4, "", APPLIED)]
    assert said(shipped, "karma xpu. pt samples 64")[0] == [("karma", "path_traced_samples", 64, "", APPLIED)]
    assert said(shipped, "octane. coherent ratio 0, 1k samples")[0][-1] == ("octane", "max_samples", 1024, "", APPLIED)


def test_durations_switches_with_their_numbers_and_short_names(shipped):
    # "3m40" and "1h31" are durations, never values
    assert said(shipped, "karma. reflection limit was 1. 4 now, chrome ok. 3m40")[0] == [
        ("karma", "reflection_limit", 1, "", REJECTED), ("karma", "reflection_limit", 4, "", APPLIED)]
    assert said(shipped, "vray. mri 10 done. 1h31")[0] == [("vray", "max_ray_intensity", 10, "", APPLIED)]
    assert said(shipped, "octane. diffuse depth was 4, now 10.")[0] == [("octane", "diffuse_depth", 4, "", APPLIED),
                                                                        ("octane", "diffuse_depth", 10, "", APPLIED)]
    # numbers said with a switch are its own settings
    assert said(shipped, "octane. clamp 20, adaptive on 0.02")[0] == [
        ("octane", "gi_clamp", 20, "", APPLIED), ("octane", "adaptive_noise_threshold", 0.02, "", APPLIED),
        ("octane", "adaptive_sampling", True, "", APPLIED)]
    assert said(shipped, "octane. adaptive 0.03 256. 12 min")[0] == [
        ("octane", "adaptive_sampling", True, "", APPLIED), ("octane", "adaptive_noise_threshold", 0.03, "", APPLIED),
        ("octane", "adaptive_min_samples", 256, "", APPLIED)]
    # an ordinary word is not "corrected" into a taxonomy word ("times" is not "time")
    assert said(shipped, "octane. adaptive sampling 5 times slower") == [[]]
    assert said(shipped, "redshift. primary BF, secondary none, bounces 1")[0] == [
        ("redshift", "primary_gi_engine", "brute_force", "", APPLIED), ("redshift", "secondary_gi_engine", "none", "", APPLIED),
        ("redshift", "gi_bounces", 1, "", APPLIED)]
    assert said(shipped, "corona. noise 4 %, passes 180. 38 min")[0] == [
        ("corona", "noise_level_limit", 4, "%", APPLIED), ("corona", "passes_limit", 180, "", APPLIED)]
    assert said(shipped, "octane, 1080p 24 fps")[0] == [("", "resolution", "1920x1080", "px", APPLIED),
                                                        ("", "frame_rate", 24, "fps", APPLIED)]
    # a pick without a verb says nothing: the model's options are often groups of settings
    assert said(shipped, "vray", ("assistant", "Option 1: max subdivs 16 and noise 0.01. Option 2: light cache 2000."),
                "second one.")[2] == []


def test_pasted_checkboxes_scientific_values_and_switches_told_before_and_after(shipped):
    assert said(shipped, "octane c4d:\nAlpha shadows [x]\nGI clamp 100")[0] == [
        ("octane", "alpha_shadows", True, "", APPLIED), ("octane", "gi_clamp", 100, "", APPLIED)]
    assert said(shipped, "cycles panel:\nDenoise [x] OpenImageDenoise")[0] == [("", "denoiser", "oidn", "", APPLIED)]
    assert said(shipped, "octane. PT kernel, gi clamp 1e6 bc caustics")[0][-1] == ("octane", "gi_clamp", 1000000, "", APPLIED)
    assert said(shipped, "cycles. total 24 trans 24 glossy 8. caustics refractive was off, on now")[0] == [
        ("cycles", "max_bounces", 24, "", APPLIED), ("cycles", "transmission_bounces", 24, "", APPLIED),
        ("cycles", "glossy_bounces", 8, "", APPLIED), ("cycles", "caustics_refractive", True, "", APPLIED)]
    assert said(shipped, "redshift. max subdiv 4 min subdiv 0, memory 44gb")[0] == [
        ("redshift", "max_subdivisions", 4, "", APPLIED), ("redshift", "min_subdivisions", 0, "", APPLIED)]


def test_sizes_said_alone_values_turned_down_and_old_values_kept(shipped):
    # "4k" said alone is a deliverable's size, never a sample count
    assert said(shipped, "octane. max samples 800", "oh and client wants it in 4k now ugh. 3840x2160, same 25fps")[1] == [
        ("", "resolution", "3840x2160", "px", APPLIED), ("", "frame_rate", 25, "fps", APPLIED)]
    got = said(shipped, "karma. Diffuse limit 0 flattens the underside of the plume. Keeping the old value of 1.")[0]
    assert ("karma", "diffuse_limit", 1, "", APPLIED) in got and ("karma", "diffuse_limit", 0, "", APPLIED) not in got
    assert said(shipped, "octane. tried the clamp at 10 and it dulled the gold cap, so I've taken it off again.")[0] == [
        ("octane", "gi_clamp", 10, "", REJECTED)]
    assert said(shipped, "The camera report lists 4300 K, so I've used 4300 K rather than 5600.")[0] == [
        ("", "white_balance", 4300, "K", APPLIED), ("", "white_balance", 5600, "K", REJECTED)]


def test_numbered_notes_bullets_and_tables_are_read_without_their_markers(shipped):
    got = said(shipped, "Corona 11, kitchen. Starting point:\n1. Passes limit 0 (off), noise level limit 3%\n"
                        "2. GI vs AA balance 16 (default)\n3. Max sample intensity 20\n4. Resolution 4000x2667 for print")[0]
    assert got == [("corona", "passes_limit", 0, "", APPLIED), ("corona", "noise_level_limit", 3, "%", APPLIED),
                   ("corona", "gi_vs_aa_balance", 16, "", APPLIED), ("corona", "max_sample_intensity", 20, "", APPLIED),
                   ("", "resolution", "4000x2667", "px", APPLIED)]
    assert said(shipped, "Arnold 7.2. Current baseline:\n1) Camera AA 4\n2) SSS 3\n3) Adaptive threshold 0.015")[0] == [
        ("arnold", "camera_aa_samples", 4, "", APPLIED), ("arnold", "sss_samples", 3, "", APPLIED),
        ("arnold", "adaptive_threshold", 0.015, "", APPLIED)]
    assert said(shipped, "corona. noise limit 3%", "8. The chrome tap has sparkly pixels though.")[1] == []
    assert said(shipped, "cycles.\n- max samples 1024\n- clamp indirect 10")[0] == [
        ("cycles", "max_samples", 1024, "", APPLIED), ("cycles", "clamp_indirect", 10, "", APPLIED)]
    got = said(shipped, "redshift. restating:\n| setting | value |\n|---|---|\n| adaptive threshold | 0.01 |\n| GI | BF / IPC |")[0]
    assert got == [("redshift", "adaptive_error_threshold", 0.01, "", APPLIED),
                   ("redshift", "primary_gi_engine", "brute_force", "", APPLIED),
                   ("redshift", "secondary_gi_engine", "irradiance_point_cloud", "", APPLIED)]


def test_versions_the_nearer_light_comparisons_and_arrows_in_a_question(shipped):
    got = said(shipped, "I'm using Octane 2023 in 3ds Max: path tracing kernel, max samples 4000, GI clamp 10")[0]
    assert ("octane", "gi_clamp", 10, "", APPLIED) in got and not [m for m in got if m[2] == 2023]
    assert said(shipped, "arnold. HDRI dome at intensity 0.9, rotation 40°, plus a rect light key at intensity 30")[0] == [
        ("", "hdri_intensity", 0.9, "", APPLIED), ("", "hdri_rotation", 40, "°", APPLIED),
        ("", "light_intensity", 30, "", APPLIED)]
    assert said(shipped, "cycles. I'll stay at ISO 200 rather than 800, then")[0] == [
        ("", "iso", 200, "", APPLIED), ("", "iso", 800, "", REJECTED)]
    assert said(shipped, "cycles. f/4 looks way nicer than 2.8 yeah, keeping f/4.")[0] == [("", "f_stop", 4, "", APPLIED)]
    # an arrow in a question or a plan: the value in use, and the one being considered
    assert said(shipped, "cycles. glossy fireflies on the puddles. clamp indirect 5 -> 3? or filter glossy?")[0] == [
        ("cycles", "clamp_indirect", 5, "", APPLIED), ("cycles", "clamp_indirect", 3, "", PROPOSED)]
    assert said(shipped, "cycles. Diffuse bounces 8 -> 4, 18% faster.")[0] == [("cycles", "diffuse_bounces", 8, "", APPLIED),
                                                                                ("cycles", "diffuse_bounces", 4, "", APPLIED)]


def test_directional_verbs_no_change_and_the_hdri_talked_about(shipped):
    assert said(shipped, "octane. The diamond edges look slightly soft. Filter size was 1.5, lowering to 1.2.")[0] == [
        ("octane", "filter_size", 1.2, "px", APPLIED)]
    assert said(shipped, "redshift. bucket 256 didn't change anything here, leaving it at 128.")[0] == [
        ("redshift", "bucket_size", 256, "px", REJECTED), ("redshift", "bucket_size", 128, "px", APPLIED)]
    assert said(shipped, "octane. GI clamp 100: no change in the prongs, reverted to 1,000,000 (the default).")[0] == [
        ("octane", "gi_clamp", 100, "", REJECTED), ("octane", "gi_clamp", 1000000, "", APPLIED)]
    got = said(shipped, "karma. Review notes: the HDRI should be 30° further to the left and half again brighter. "
                        "It's at rotation 120 and intensity 1 now.")[0]
    assert ("", "hdri_rotation", 120, "°", APPLIED) in got and ("", "hdri_intensity", 1, "", APPLIED) in got
    # value-first lists keep reading value-first
    assert said(shipped, "karma xpu. 64 pixel samples, 4 diffuse limit, 2 reflection limit.")[0] == [
        ("karma", "pixel_samples", 64, "", APPLIED), ("karma", "diffuse_limit", 4, "", APPLIED),
        ("karma", "reflection_limit", 2, "", APPLIED)]


def test_the_engine_left_behind_plans_for_the_finals_and_states_in_ones_own_question(shipped):
    got = said(shipped, "Karma XPU in Houdini 20.5, having come from V-Ray. I've got pixel samples at 16, the diffuse limit at 3.")[0]
    assert got == [("karma", "pixel_samples", 16, "", APPLIED), ("karma", "diffuse_limit", 3, "", APPLIED)]
    assert said(shipped, "pasting from arnold render settings (maya):\nCamera (AA): 4")[0] == [
        ("arnold", "camera_aa_samples", 4, "", APPLIED)]
    assert said(shipped, "arnold. For the final renders the plan is AA 6 with SSS 2, but that's next week.")[0] == [
        ("arnold", "camera_aa_samples", 6, "", PROPOSED), ("arnold", "sss_samples", 2, "", PROPOSED)]
    assert said(shipped, "corona. i used intel. whats max ray depth? its 25.")[0] == [
        ("", "denoiser", "oidn", "", APPLIED), ("corona", "max_ray_depth", 25, "", APPLIED)]
    assert said(shipped, "karma. pixel samples 9", "better but 3x slower, hmm")[1] == []


def test_a_time_said_in_passing_does_not_hide_the_verdict_on_a_value(shipped):
    # seen in `kelvin settings list` after an import: "back to 1024" had become a 1024 mm lens
    got = said(shipped, "octane. max samples was 1024, now 2048. f5.6 on the 85mm",
               "2048 made it 9 minutes a frame, no way. back to 1024")
    assert got[1] == [("octane", "max_samples", 2048, "", REJECTED), ("octane", "max_samples", 1024, "", APPLIED)]
