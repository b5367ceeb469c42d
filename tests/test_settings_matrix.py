"""Every parameter of the shipped catalogue, stated the plainest ways (issue 24): each row must give
the right engine, parameter, value and status. The rows are generated from the catalogue itself
(tests/support/statement_matrix.py), so a parameter added to resources/parameters.toml is checked
the moment it is added."""
from __future__ import annotations

import collections

import pytest

from app.core.render_settings.extraction import Context
from app.services.memory import load_extractor
from tests.support.statement_matrix import ENGINE_WORDS, check, rows, shared_names, shared_with_any


@pytest.fixture(scope="module")
def shipped():
    return load_extractor()


@pytest.fixture(scope="module")
def matrix(shipped):
    return rows(shipped)


def test_the_matrix_covers_every_parameter_of_every_engine_camera_light_and_output(shipped, matrix):
    covered = {r.spec for r in matrix}
    assert covered == set(shipped.cat.specs)  # nothing left out
    engines = {e for e, _ in covered}
    assert {"", "octane", "redshift", "arnold", "cycles", "vray", "karma", "corona"} <= engines
    per = collections.Counter(r.spec for r in matrix)
    assert min(per.values()) >= 8  # every parameter said at least eight ways
    templates = {r.template for r in matrix}
    for t in ("set X to N", "X is N", "X is currently N", "X in ENGINE set to N", "raised X to N", "X from A to B",
              "X: N", "X = N", "went with N for X", "back to N on X", "X to N, M was too slow", "X N instead of M",
              "X N with its unit", "model: try X at N"):
        assert t in templates, t


@pytest.mark.parametrize("engine", ["octane", "redshift", "arnold", "cycles", "vray", "karma", "corona", "any"])
def test_every_plain_statement_gives_the_right_engine_parameter_value_and_status(shipped, matrix, engine):
    mine = [r for r in matrix if (r.spec[0] or "any") == engine]
    assert mine
    wrong = [problem for r in mine if (problem := check(shipped, r))]
    assert not wrong, f"{len(wrong)} of {len(mine)} statements misread:\n" + "\n".join(wrong[:40])


def test_no_name_is_claimed_by_two_parameters_of_one_engine(shipped):
    """Two parameters of one engine sharing a phrase could never be told apart by any rule: the
    catalogue gives each phrase to one parameter per engine."""
    assert shared_names(shipped) == {}


def test_a_name_an_engine_shares_with_camera_or_output_is_the_engines_in_its_own_conversation(shipped):
    """Engine-aware lookup: where an engine's parameter and a camera, light or output one share a
    phrase ("exposure" in Octane's imager and the camera's), the engine's conversation means the
    engine's, any other conversation the shared one."""
    pairs = shared_with_any(shipped)
    for phrase, own, common in pairs:
        got, _ = shipped.extract(f"{phrase} 2", "user", Context(engine=own.engine))
        assert [(m.engine, m.parameter) for m in got][:1] == [own.ident], (phrase, got)
        other = next(e for e in ENGINE_WORDS if e != own.engine)
        got, _ = shipped.extract(f"{phrase} 2", "user", Context(engine=other))
        assert [(m.engine, m.parameter) for m in got][:1] in ([common.ident], []), (phrase, other, got)


def test_a_setting_belongs_to_the_engine_of_the_conversation_not_another_owner_of_its_name(shipped):
    """In an Octane day "adaptive sampling", "noise threshold" and "min samples" are Octane's;
    "light samples" in Redshift is Redshift's; a GI clamp said in Octane is never Redshift's
    max secondary ray intensity."""
    def said(engine: str, text: str) -> list[tuple]:
        got, _ = shipped.extract(text, "user", Context(engine=engine))
        return sorted((m.engine, m.parameter, m.value, m.status) for m in got)

    assert said("octane", "Adaptive sampling on, noise threshold 0.03 instead of 0.02, min samples 256.") == sorted([
        ("octane", "adaptive_sampling", True, "applied"), ("octane", "adaptive_noise_threshold", 0.02, "rejected"),
        ("octane", "adaptive_noise_threshold", 0.03, "applied"), ("octane", "adaptive_min_samples", 256, "applied")])
    assert said("redshift", "Light samples 256") == [("redshift", "light_samples", 256, "applied")]
    assert said("octane", "GI clamp is currently 25") == [("octane", "gi_clamp", 25, "applied")]
    assert said("cycles", "noise threshold 0.05") == [("cycles", "noise_threshold", 0.05, "applied")]
    assert said("octane", "noise threshold 0.05") == [("octane", "adaptive_noise_threshold", 0.05, "applied")]


def test_the_plain_day_that_lost_or_misfiled_values(shipped):
    """The issue's day, message by message, in one conversation (the ledger's own context)."""
    ctx = Context()
    said = []
    for text in ("C4D + Octane today, the forest shot.", "GI clamp is currently 25",
                 "Output resolution 1920x1080 for the review renders; final delivery will be 3840x2160.",
                 "Density back to 2.2", "Light samples 256", "Changed GI clamp from 25 to 10."):
        got, ctx = shipped.extract(text, "user", ctx)
        said.append(sorted((m.engine, m.parameter, m.value, m.status) for m in got))
    assert said[1] == [("octane", "gi_clamp", 25, "applied")]
    assert said[2] == [("", "resolution", "1920x1080", "applied"), ("", "resolution", "3840x2160", "proposed")]
    assert said[3] == []  # a medium's density: nothing the catalogue knows, never the GI clamp
    assert said[4] == []  # Redshift's light samples: never Octane's max samples
    assert said[5] == [("octane", "gi_clamp", 10, "applied"), ("octane", "gi_clamp", 25, "applied")]
