"""Property-based tests (hypothesis): whatever an artist or a file throws at Kelvin's edges — the
importer, project names, filter values, the settings rules, the command line's arguments — the answer
is a value or a plain, expected error, never an exception that would reach the artist as a traceback,
and never a path outside the data folder."""
from __future__ import annotations

import json
import os
import string
import time
from pathlib import Path
from unittest import mock

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from app.core.projects import folder_name  # noqa: E402
from app.core.records import RecordError, check_name  # noqa: E402
from app.services.importer import ImportProblem, read_jsonl  # noqa: E402
from app.services.memory import load_extractor, load_tagger  # noqa: E402

FAST = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                         HealthCheck.too_slow])
EXTRACTOR = load_extractor()
TAGGER = load_tagger()

json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=40)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=12)
field_names = st.sampled_from(["text", "id", "project", "conversation_id", "role", "speaker", "timestamp", "extra"])
lines = st.dictionaries(field_names, json_values, max_size=7)


@FAST
@given(st.binary(max_size=2000))
def test_an_import_of_any_bytes_is_read_or_refused_in_plain_words(tmp_path_factory, data):
    f = tmp_path_factory.mktemp("imp") / "any.jsonl"
    f.write_bytes(data)
    try:
        items = read_jsonl(f, "default")
    except ImportProblem as exc:
        assert str(exc) and "Traceback" not in str(exc)
    else:
        assert all(it.message.text.strip() for it in items)


@FAST
@given(st.lists(lines, min_size=1, max_size=5))
def test_json_lines_of_every_wrong_shape_are_read_or_refused_with_their_line(tmp_path_factory, rows):
    f = tmp_path_factory.mktemp("imp") / "rows.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    try:
        items = read_jsonl(f, "default")
    except ImportProblem as exc:
        assert "line" in str(exc)
    else:
        assert len(items) <= len(rows)
        for it in items:
            check_name(it.project, "project")  # every project name that gets in is a valid one


@FAST
@given(st.text(max_size=300))
def test_any_project_name_is_refused_or_gets_a_folder_inside_the_data_folder(tmp_path_factory, name):
    data = tmp_path_factory.mktemp("data")
    try:
        name = check_name(name, "project")
    except RecordError:
        return
    folder = folder_name(name)
    assert folder and "/" not in folder and "\\" not in folder and folder not in (".", "..")
    assert (data / folder).resolve().parent == data.resolve()


VOCAB = ["GI clamp", "max samples", "adaptive sampling", "noise threshold", "set", "to", "is", "currently", "from",
         "instead of", "back to", "went with", "for", "in", "Octane", "Redshift", "Cycles", "V-Ray", "Arnold", "Karma",
         "10", "0.03", "-5", "1e309", "1,024", "1920x1080", "3840 x 2160", "8-16", "35mm", "f/2.8", "180°", "50%",
         "on", "off", "brute force", "=", ":", "→", "½", "٣", "\n", "|", "---", "**", "`", "?", "!", "…", "𝟏𝟎"]
texts = st.text(max_size=5000) | st.lists(st.sampled_from(VOCAB) | st.text(max_size=6), max_size=400).map(" ".join)


@FAST
@given(texts)
def test_the_settings_rules_take_any_text_without_an_exception_in_bounded_time(text):
    t0 = time.perf_counter()
    for role in ("user", "assistant"):
        mentions, _ = EXTRACTOR.extract(text, role)
        for m in mentions:
            assert m.parameter and m.status
    TAGGER.tag(text)
    assert time.perf_counter() - t0 < 5.0


@settings(max_examples=20, deadline=None)
@given(st.text(alphabet=string.ascii_letters + string.digits + " -_.,'\"\\/é€\u202e", max_size=2000))
def test_a_huge_or_odd_paste_is_extracted_in_bounded_time(chunk):
    text = (chunk + "\n") * 20
    t0 = time.perf_counter()
    EXTRACTOR.extract(text, "user")
    assert time.perf_counter() - t0 < 10.0


WORDS = ["memory", "search", "list", "show", "stats", "edit", "delete", "remember", "memories", "forget", "import",
         "settings", "history", "set", "unset", "project", "create", "rename", "new-conversation", "info", "doctor",
         "--json", "--k", "--limit", "--domain", "--engine", "--type", "--since", "--until", "--project", "--text",
         "--all-projects", "--candidates", "--note", "--batch", "--category", "0", "-1", "5", "99999999999999999999",
         "lighting", "Octane", "V-Ray", "any", "gi clamp", "-5", "on", "1920x1080", "2026-13-45", "2026-11-20",
         "x" * 300, "", " ", "\x1b[2J", "é€", "../..", "/etc/passwd", "nan", "inf", "m_1", "k_1"]


FILTERS = ["--domain=", "--type=", "--engine=", "--since=", "--until="]
# command → (positional arguments, its options: "--x=" takes a value, "--x" is a switch)
COMMANDS = {
    ("info",): (0, []),
    ("memory", "search"): (1, ["--k=", "--json", "--all-projects", *FILTERS]),
    ("memory", "list"): (0, ["--limit=", "--json", *FILTERS]),
    ("memory", "show"): (1, ["--json"]), ("memory", "stats"): (0, ["--json"]),
    ("memory", "forget"): (1, []), ("memory", "remember"): (1, ["--category="]),
    ("memory", "edit"): (1, ["--text="]), ("memory", "delete"): (1, []), ("memory", "memories"): (0, ["--json"]),
    ("settings", "list"): (0, ["--engine=", "--candidates", "--json"]),
    ("settings", "history"): (1, ["--engine=", "--json"]),
    ("settings", "set"): (2, ["--engine=", "--note="]), ("settings", "unset"): (1, ["--engine="]),
    ("project", "list"): (0, ["--json"]), ("project", "create"): (1, []), ("project", "rename"): (2, []),
    ("project", "new-conversation"): (0, []),
}
tokens = st.sampled_from(WORDS) | st.text(max_size=12)


@st.composite
def command_lines(draw):
    """Mostly well-formed command lines (so that the commands run, not just argparse), with any values."""
    out = []
    if draw(st.booleans()):
        out += ["--project", draw(tokens)]
    command = draw(st.sampled_from(sorted(COMMANDS)))
    positionals, options = COMMANDS[command]
    out += [*command, *(draw(tokens) for _ in range(positionals))]
    for opt in draw(st.lists(st.sampled_from(options), max_size=3)) if options else []:
        out.append(opt + draw(tokens) if opt.endswith("=") else opt)
    if draw(st.integers(0, 9)) == 0:  # now and then, something argparse must refuse
        out.insert(draw(st.integers(0, len(out))), draw(tokens))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command_lines())
def test_any_arguments_end_in_an_answer_or_a_plain_error(argv):
    """The command line with any arguments (no chat, window, GPU or brief: they wait on a person or
    a model): an answer, a plain error (1) or a usage error (2); never a traceback, never a path
    outside the data folder."""
    from app import cli

    data = Path(os.environ["KELVIN_DATA_DIR"])
    # no display: a bare `kelvin` or `kelvin app` prints where things are instead of opening the window
    no_display = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    try:
        with mock.patch.dict(os.environ, no_display, clear=True):
            rc = cli.main(argv)
    except SystemExit as exc:  # argparse's own usage errors and --help
        rc = exc.code
    hypothesis.event(f"exit {rc}")
    assert rc in (0, 1, 2), (argv, rc)
    if data.exists():
        for p in data.rglob("*"):
            assert p.resolve().is_relative_to(data.resolve()), p



# ---- issue 31: every setting, and the scene format -------------------------------------------------
def _toml(value) -> str:
    """A value as TOML text (what an artist could type), including numbers TOML reads as inf or huge."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return "nan" if value != value else "inf" if value == float("inf") else "-inf" if value == float("-inf") \
            else repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + "}"


toml_scalars = (st.booleans() | st.integers() | st.integers(min_value=-10**30, max_value=10**30)
                | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=30)
                | st.sampled_from(["1e400", "-5", "0", "99999999999999999999", "gpu", "none", "cpu", "recall"]))
toml_values = st.recursive(toml_scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(string.ascii_letters, min_size=1, max_size=5), inner, max_size=3),
                           max_leaves=6)


def _setting_names() -> list[str]:
    from app.config import Config

    return [name for name, *_ in Config.describe()]


@FAST
@given(st.dictionaries(st.sampled_from(_setting_names()), toml_values, min_size=1, max_size=4))
def test_every_setting_from_the_file_is_loaded_in_its_range_or_refused_in_one_sentence(tmp_path_factory, chosen):
    from dataclasses import fields

    from app.config import Config, ConfigError, load

    cfg = tmp_path_factory.mktemp("cfg")
    (cfg / "kelvin.toml").write_text("".join(f"{k} = {_toml(v)}\n" for k, v in chosen.items()), encoding="utf-8")
    with mock.patch.dict(os.environ, {"KELVIN_CONFIG_DIR": str(cfg)}):
        try:
            config = load()
        except ConfigError as exc:
            assert str(exc) and "\n" not in str(exc).strip() and "Traceback" not in str(exc)
            return
    for f in fields(Config):
        value = getattr(config, f.name)
        assert isinstance(value, type(f.default))
        low, high = f.metadata.get("low"), f.metadata.get("high")
        if low is not None:
            assert low <= value <= high
        if isinstance(value, float):
            assert value == value and value not in (float("inf"), float("-inf"))


@FAST
@given(st.sampled_from(_setting_names()), st.text(max_size=30) | st.sampled_from(["1e400", "-5", "nan", "inf", "7"]))
def test_every_setting_from_the_environment_is_loaded_in_its_range_or_refused(name, text):
    from app.config import Config, ConfigError, load

    env = next(e for n, _d, _desc, e in Config.describe() if n == name)
    if not env or "\x00" in text:
        return
    with mock.patch.dict(os.environ, {env[0]: text}):
        try:
            config = load()
        except ConfigError as exc:
            assert str(exc)
            return
    assert getattr(config, name) is not None


def _scene_items():
    keys = st.sampled_from(["engine", "parameter", "name", "value", "unit"])
    params = st.sampled_from(["max_samples", "clamp_indirect", "resolution", "denoiser", "light_tree", "lens",
                              "view_transform", "", "max samples"])
    values = json_values | st.integers(min_value=-10**400, max_value=10**400) | st.text(max_size=20).map(
        lambda t: t + "\ud800")
    return st.dictionaries(keys, values, max_size=5) | st.fixed_dictionaries(
        {"engine": st.sampled_from(["cycles", "", "any", "octane"]), "parameter": params, "value": values})


@FAST
@given(st.lists(_scene_items(), max_size=6), st.lists(st.dictionaries(st.sampled_from(["name", "value", "unit"]),
                                                                     json_values, max_size=3), max_size=3),
       json_values)
def test_a_scene_of_any_shape_is_read_into_values_the_ledger_can_hold_or_refused(settings_, extra, anything):
    """Whatever a DCC script sends, every value that reaches the ledger can be journaled (UTF-8 JSON) and
    compared with any other; everything else is a SceneError in one sentence."""
    from app.core.render_settings.parameters import holdable, same_value
    from app.core.render_settings.scene import SceneError, read

    data = {"format": "kelvin-scene", "version": 1, "app": anything if isinstance(anything, str) else "x",
            "file": "f.blend\ud800", "scene": "S", "engine": "cycles", "settings": settings_, "extra": extra,
            "notes": ["a note\ud800"]}
    try:
        scene = read(data, EXTRACTOR.cat)
    except SceneError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    for v in (*scene.values, *scene.candidates):
        assert holdable(v.value) == "", v
        json.dumps({"name": v.name, "value": v.value, "unit": v.unit}, ensure_ascii=False).encode("utf-8")
        same_value(v.value, 10**400)
    for text in (scene.file, scene.app, scene.scene, *scene.notes):
        text.encode("utf-8")


@FAST
@given(st.binary(max_size=400) | st.integers(min_value=1, max_value=5000).map(lambda n: b"[" * n + b"]" * n))
def test_scene_json_of_any_bytes_is_read_or_refused_in_one_sentence(raw):
    from app.cli.scene import _from_json
    from app.core.render_settings.scene import SceneError

    try:
        _from_json(raw, "the JSON on stdin", EXTRACTOR.cat)
    except SceneError as exc:
        assert str(exc) and "\n" not in str(exc)
