"""Config: declared once; file < environment < flags; bad values explained."""
from __future__ import annotations

from pathlib import Path

import pytest

from app import config as config_mod
from app.config import Config, ConfigError, load


def _write(tmp_path, text):
    cfg = tmp_path / "config"
    cfg.mkdir(exist_ok=True)
    (cfg / "kelvin.toml").write_text(text, encoding="utf-8")


def test_defaults_and_every_option_is_described(monkeypatch):
    monkeypatch.delenv("KELVIN_DATA_DIR")
    monkeypatch.delenv("KELVIN_EMBEDDER")
    monkeypatch.delenv("KELVIN_OLLAMA_HOST")
    s = load()
    assert (s.project, s.embedder, s.ollama_host, s.num_ctx) == \
        ("default", "ollama:nomic-embed-text", "http://127.0.0.1:11434", 8192)
    described = Config.describe()
    assert all(desc for _, _, desc, _ in described)
    assert {name for name, *_ in described} >= {"data_dir", "ollama_host", "embedder", "chat_model", "project"}
    # from a source checkout the data lives in session_data/
    assert s.data_path() == Path(config_mod.__file__).resolve().parent.parent / "session_data"


def test_file_then_environment_then_flags(tmp_path, monkeypatch):
    _write(tmp_path, 'schema_version = 1\nproject = "from-file"\nchat_model = "qwen2.5:7b"\nnum_ctx = 4096\n')
    monkeypatch.delenv("KELVIN_EMBEDDER")
    s = load()
    assert (s.project, s.chat_model, s.num_ctx) == ("from-file", "qwen2.5:7b", 4096)
    monkeypatch.setenv("KELVIN_PROJECT", "from-env")
    monkeypatch.setenv("KELVIN_CHAT_MODEL", "llama3.2:3b")
    assert (load().project, load().chat_model) == ("from-env", "llama3.2:3b")
    assert load({"project": "from-flag", "data_dir": None}).project == "from-flag"


def test_ollama_host_honours_the_usual_variable(monkeypatch):
    monkeypatch.delenv("KELVIN_OLLAMA_HOST")
    monkeypatch.setenv("OLLAMA_HOST", "http://gpu-box:11434")
    assert load().ollama_host == "http://gpu-box:11434"
    monkeypatch.setenv("KELVIN_OLLAMA_HOST", "http://127.0.0.1:11500")
    assert load().ollama_host == "http://127.0.0.1:11500"  # Kelvin's own wins


@pytest.mark.parametrize("text, message", [
    ("num_ctx = 'big'", "must be a whole number"),
    ("num_ctx = 100", "between 1024 and 1048576"),
    ("mode = 'turbo'", "mode must be gpu, cpu or recall"),
    ("embedder = [", "not valid TOML"),
    ("schema_version = 99", "understands up to 1"),
])
def test_bad_settings_are_explained(tmp_path, text, message):
    _write(tmp_path, text)
    with pytest.raises(ConfigError, match=message):
        load()


def test_unknown_keys_are_ignored_with_a_warning(tmp_path, caplog):
    _write(tmp_path, 'colour = "blue"\nproject = "p"\n')
    assert load().project == "p"
    assert "unknown setting 'colour'" in caplog.text


def test_data_dir_flag_and_env(tmp_path, monkeypatch):
    monkeypatch.setenv("KELVIN_DATA_DIR", str(tmp_path / "env-data"))
    assert load().data_path() == (tmp_path / "env-data").resolve()
    assert load({"data_dir": str(tmp_path / "flag-data")}).data_path() == (tmp_path / "flag-data").resolve()


def test_save_setting_changes_one_key_and_keeps_every_other_line(tmp_path):
    _write(tmp_path, '# Kelvin on the farm machine\nchat_model = "qwen2.5:7b"\ndata_dir = "/old"  # was here\n'
                     "num_ctx = 4096\n")
    path = config_mod.save_setting("data_dir", "D:\\Renders\\Kelvin \"memory\"")  # backslashes and quotes
    assert path == tmp_path / "config" / "kelvin.toml"
    text = path.read_text(encoding="utf-8")
    assert text == ('# Kelvin on the farm machine\nchat_model = "qwen2.5:7b"\n'
                    'data_dir = "D:\\\\Renders\\\\Kelvin \\"memory\\""\nnum_ctx = 4096\n')
    s = load({}, environ={})
    assert (s.data_dir, s.chat_model, s.num_ctx) == ("D:\\Renders\\Kelvin \"memory\"", "qwen2.5:7b", 4096)
    config_mod.save_setting("vram_guard", False)  # a new key goes in, typed
    assert load({}, environ={}).vram_guard is False
    assert [p.name for p in path.parent.iterdir()] == ["kelvin.toml"]  # no temp file left behind


def test_save_setting_makes_the_file_and_refuses_what_it_cannot_write_safely(tmp_path):
    config_mod.save_setting("project", "Nike / Forest")
    assert (tmp_path / "config" / "kelvin.toml").read_text(encoding="utf-8") == 'project = "Nike / Forest"\n'
    with pytest.raises(ConfigError, match="no setting 'colour'"):
        config_mod.save_setting("colour", "orange")
    with pytest.raises(ConfigError, match="must be a whole number"):
        config_mod.save_setting("num_ctx", "lots")
    _write(tmp_path, 'chat_model = "unterminated\n')
    with pytest.raises(ConfigError, match="not valid TOML"):  # the artist's broken file is left to the artist
        config_mod.save_setting("data_dir", "/new")
    assert (tmp_path / "config" / "kelvin.toml").read_text(encoding="utf-8") == 'chat_model = "unterminated\n'


def test_env_override_names_the_variable_that_wins():
    assert config_mod.env_override("data_dir", {"KELVIN_DATA_DIR": "/x"}) == "KELVIN_DATA_DIR"
    assert config_mod.env_override("ollama_host", {"OLLAMA_HOST": "gpu-box:11434"}) == "OLLAMA_HOST"
    assert config_mod.env_override("data_dir", {}) == ""


@pytest.mark.parametrize("line, said", [
    ("ollama_timeout_s = -5", "setting 'ollama_timeout_s' must be between 0.1 and 3600 (got -5)"),
    ("num_ctx = 1e400", "setting 'num_ctx' must be a whole number (got inf)"),
    ("num_ctx = 99999999999999999999", "setting 'num_ctx' must be between 1024 and 1048576 (got 1e+20)"),
    ("num_ctx = 8192.5", "setting 'num_ctx' must be a whole number (got 8192.5)"),
    ("vram_hold_s = nan", "setting 'vram_hold_s' must be a number (got nan)"),
    ("gpu_interval_ms = 100", "setting 'gpu_interval_ms' must be between 250 and 2000 (got 100)"),
    ('chat_model = ["a", "b"]', "setting 'chat_model' must be a text"),
    ("vram_guard = 3", "setting 'vram_guard' must be true or false (got 3)"),
])
def test_a_bad_setting_is_refused_when_loaded_with_its_range(tmp_path, line, said):
    """Issue 31, finding 11: these were tracebacks, or (a 20-digit num_ctx) sent to the model server as is."""
    _write(tmp_path, f"schema_version = 1\n{line}\n")
    with pytest.raises(ConfigError) as exc:
        load()
    assert said in str(exc.value)


def test_a_bad_setting_from_the_environment_or_the_command_line_is_refused_too(monkeypatch):
    monkeypatch.setenv("KELVIN_OLLAMA_TIMEOUT", "-5")
    with pytest.raises(ConfigError, match="between 0.1 and 3600"):
        load()
    monkeypatch.setenv("KELVIN_OLLAMA_TIMEOUT", "1e400")
    with pytest.raises(ConfigError, match="must be a number"):
        load()
    monkeypatch.delenv("KELVIN_OLLAMA_TIMEOUT")
    monkeypatch.setenv("KELVIN_NUM_CTX", "99999999999999999999")
    with pytest.raises(ConfigError, match="between 1024 and 1048576"):
        load()
