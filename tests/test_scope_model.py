"""Which light, camera or output a value belongs to, read by the shipped scope model
(app/core/render_settings/scope_model.py, resources/scope_model.json; docs/benchmarks.md §14 "Stop 40").
Sentences written for this test — in none of the labelled sets — whose object the rules of scopes.py
miss: through the real extractor with the shipped model, then with the rules alone (the same
extractor, the model taken away), so each test shows what the model adds."""
from __future__ import annotations

import json
import logging

import pytest

from app.core.render_settings.extraction import Context
from app.core.render_settings.scope_model import ScopeModel, candidates
from app.services import memory as memory_module
from app.services.memory import load_extractor, load_scope_model


@pytest.fixture(scope="module")
def extractor():
    ex = load_extractor()
    assert ex.scope_model is not None  # the shipped one
    return ex


def read(ex, text: str, model=True) -> list[tuple]:
    shipped = ex.scope_model
    ex.scope_model = shipped if model else None
    try:
        got, _ = ex.extract(text, "user", Context())
    finally:
        ex.scope_model = shipped
    return sorted((m.parameter, m.value, m.scope) for m in got)


@pytest.mark.parametrize("text, expected", [
    ("Karma in Houdini. the street lamp is 3200K at intensity 4, the neon sign 8000K.",
     [("light_intensity", 4, "street"), ("light_temperature", 3200, "street"), ("light_temperature", 8000, "neon sign")]),
    ("Redshift. For CAM_top, a 35mm lens would show the whole table.", [("focal_length", 35, "cam top")]),
    ("Cycles. the cool fill looks flat; try 7000K on the rim and warm the key to around 4200K.",
     [("light_temperature", 4200, "key"), ("light_temperature", 7000, "rim")]),
    ("Octane. Shallow depth of field on CAM_macro, f/1.8 focused on the label, would lift it from the bottle.",
     [("depth_of_field", True, "cam macro"), ("f_stop", 1.8, "cam macro")]),
])
def test_the_model_reads_the_object_the_rules_miss(extractor, text, expected):
    assert read(extractor, text) == expected
    assert read(extractor, text, model=False) != expected  # what the rules alone make of it


def test_several_lights_in_one_sentence_stay_each_their_own(extractor):
    assert read(extractor, "Houdini and Karma, kitchen. key at 6000K, the fill down to 4500K and the rim at 7000K.") == [
        ("light_temperature", 4500, "fill"), ("light_temperature", 6000, "key"), ("light_temperature", 7000, "rim")]
    assert read(extractor, "Octane. turntable at 1920x1080 and the packshot 3000x3000") == [
        ("resolution", "1920x1080", "turntable"), ("resolution", "3000x3000", "packshot")]


def test_a_render_setting_said_with_no_object_stays_render_wide(extractor):
    assert read(extractor, "Redshift: bumped max samples to 1024, the noise in the corners is gone.") == [
        ("unified_samples_max", 1024, "")]


def test_the_rules_reading_stands_unless_another_scores_clearly_better():
    options = [("", ["a"]), ("key", ["b"]), ("fill", ["c"])]
    close = ScopeModel(weights={"a": 0.0, "b": 0.3, "c": 0.1}, margin=0.3)
    assert close.choose(options, rules="fill") == "fill"  # within the margin: the rules' reading
    clear = ScopeModel(weights={"a": 0.0, "b": 3.0, "c": -1.0}, margin=0.3)
    assert clear.choose(options, rules="fill") == "key"
    assert clear.choose(options, rules="") == "key"


def test_every_candidate_is_a_name_in_the_sentence_or_one_the_conversation_knows():
    toks = "the street lamp is 3200k at intensity 4 , the neon sign 8000k".split()
    got = dict(candidates("light_intensity", False, toks, toks.index("4"), [(6, 7)], ("turntable",), "", ""))
    assert "" in got and "street" in got  # render-wide, and "street lamp" (its generic last word folded)
    assert "turntable" not in got  # known, but not said here
    assert not {"is", "at", "intensity", "3200k"} & set(got)
    toks = "for the turntable intensity 2".split()
    got = dict(candidates("light_intensity", False, toks, 4, [(3, 4)], ("turntable",), "", "turntable"))
    assert {"known", "known_nearest"} <= set(got["turntable"])


def test_a_missing_or_broken_model_file_leaves_the_rules_to_decide(monkeypatch, caplog):
    monkeypatch.setattr(memory_module, "SCOPE_MODEL", "no_such_scope_model.json")
    assert load_scope_model() is None
    monkeypatch.setattr(memory_module, "SCOPE_MODEL", "kelvin.qss")  # not JSON
    with caplog.at_level(logging.WARNING, logger=memory_module.log.name):
        assert load_scope_model() is None
    assert "scopes are read by the rules alone" in caplog.text


def test_the_bundled_files_are_parsed_once_and_each_caller_gets_its_own_taxonomy(monkeypatch, caplog):
    from app.services.memory import load_cues, load_status_model, load_taxonomy, load_trust

    assert load_scope_model() is load_scope_model() and load_status_model() is load_status_model()
    assert load_cues() is load_cues() and load_trust() is load_trust()
    first = load_taxonomy()
    first["engines"].clear()  # a caller that changes its copy changes nobody else's
    assert "octane" in load_taxonomy()["engines"]
    monkeypatch.setattr(memory_module, "SCOPE_MODEL", "kelvin.qss")  # a failure is not kept: it is said every time
    for _ in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger=memory_module.log.name):
            assert load_scope_model() is None
        assert "scopes are read by the rules alone" in caplog.text


def test_services_share_the_bundled_catalogue_and_an_artists_taxonomy_gets_its_own(make_service, tmp_path, monkeypatch):
    a, b = make_service(data_dir=str(tmp_path / "a")), make_service(data_dir=str(tmp_path / "b"))
    assert a.catalogue is b.catalogue and a.tagger is b.tagger  # built once from the bundled files alone
    config = tmp_path / "own-config"
    config.mkdir()
    (config / "taxonomy.toml").write_text('[engines.moonray]\nnames = ["moonray"]\n', encoding="utf-8")
    monkeypatch.setenv("KELVIN_CONFIG_DIR", str(config))
    own = make_service(data_dir=str(tmp_path / "own"))
    assert own.catalogue is not a.catalogue and own.tagger is not a.tagger
    assert "moonray" in own.catalogue.engine_list and "moonray" not in a.catalogue.engine_list


def test_the_shipped_model_file_says_how_it_was_made():
    from app import resources

    data = json.loads(resources.read_text("scope_model.json"))
    assert data["about"].startswith("bench/train_scope.py") and data["weights"] and 0 <= data["margin"] < 1
    assert not {"x", "y", "z"} & set(data["sets"])  # the fourth blind set was never learned from
