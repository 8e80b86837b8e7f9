"""Settings: flags, then environment, then ./calibrate.toml, then the user config; `calibrate config`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from calibrate.cli import cli
from calibrate.settings import Settings, SettingsError


def test_flag_beats_environment_beats_files(tmp_path):
    local, user = tmp_path / "calibrate.toml", tmp_path / "user.toml"
    local.write_text('db = "local.db"\nannotator = "from-local"\n')
    user.write_text('db = "user.db"\nannotator = "from-user"\nkeymap = "keys.toml"\n')
    settings = Settings({"db": None}, environ={"CALIBRATE_ANNOTATOR": "from-env"}, files=[local, user])
    assert settings.lookup("annotator") == ("from-env", "$CALIBRATE_ANNOTATOR")
    assert settings.lookup("db") == (str(tmp_path / "local.db"), str(local))
    assert settings.lookup("keymap") == (str(tmp_path / "keys.toml"), str(user))
    assert settings.with_flags(annotator="ana").lookup("annotator") == ("ana", "command line")
    assert settings.lookup("api_key_env") == ("OPENAI_API_KEY", "default")


def test_an_unknown_key_in_a_config_file_is_named(tmp_path):
    bad = tmp_path / "calibrate.toml"
    bad.write_text('database = "x.db"\n')
    with pytest.raises(SettingsError, match="unknown setting 'database'"):
        Settings(files=[bad])


def test_config_command_says_where_each_setting_came_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("CALIBRATE_ANNOTATOR", "ana")
    monkeypatch.delenv("CALIBRATE_DB", raising=False)
    (tmp_path / "calibrate.toml").write_text('db = "team.db"\n')
    result = CliRunner().invoke(cli, ["config", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["setting"]: r for r in json.loads(result.output)}
    assert rows["db"]["value"] == str(tmp_path / "team.db") and rows["db"]["from"].endswith("calibrate.toml")
    assert (rows["annotator"]["value"], rows["annotator"]["from"]) == ("ana", "$CALIBRATE_ANNOTATOR")
    bad = CliRunner().invoke(cli, ["--db", str(tmp_path / "x.db"), "config"])
    assert bad.exit_code == 0 and "command line" in bad.output
