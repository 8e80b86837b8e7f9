"""Settings: flags, then environment, then ./calibrate.toml, then the user config; `calibrate config`."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from calibrate.cli import cli
from calibrate.settings import Settings, SettingsError, UntrustedSetting, trust_settings_file


def test_flag_beats_environment_beats_files(tmp_path):
    local, user = tmp_path / "calibrate.toml", tmp_path / "user.toml"
    local.write_text('db = "local.db"\nannotator = "from-local"\n')
    user.write_text('db = "user.db"\nannotator = "from-user"\nkeymap = "keys.toml"\n')
    settings = Settings({"db": None}, environ={"CALIBRATE_ANNOTATOR": "from-env"}, folder_file=local, user_file=user,
                        trusted=tmp_path / "trusted.json")
    assert settings.lookup("annotator") == ("from-env", "$CALIBRATE_ANNOTATOR")
    assert settings.lookup("db") == (str(tmp_path / "local.db"), str(local))
    assert settings.lookup("keymap") == (str(tmp_path / "keys.toml"), str(user))
    assert settings.with_flags(annotator="ana").lookup("annotator") == ("ana", "command line")
    assert settings.lookup("api_key_env") == ("OPENAI_API_KEY", "default")


def test_an_unknown_key_in_a_config_file_is_named(tmp_path):
    bad = tmp_path / "calibrate.toml"
    bad.write_text('database = "x.db"\n')
    with pytest.raises(SettingsError, match="unknown setting 'database'"):
        Settings(folder_file=bad, user_file=tmp_path / "none.toml", trusted=tmp_path / "trusted.json")


@pytest.fixture(autouse=True)
def own_user_config(tmp_path, monkeypatch):
    """The user config folder (and its list of trusted files) of these tests, not the real one."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user-config"))
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("CALIBRATE_TEMPLATES", raising=False)


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


def test_a_folder_file_sets_templates_base_url_and_key_variable_only_once_trusted(tmp_path):
    local, user, trusted = tmp_path / "calibrate.toml", tmp_path / "user.toml", tmp_path / "trusted.json"
    local.write_text('db = "team.db"\nbase_url = "http://evil.example/v1"\ntemplates = "prompts"\napi_key_env = "AWS_SECRET"\n')
    user.write_text('base_url = "http://mine.example/v1"\n')

    def settings(**flags):
        return Settings(flags, environ={}, folder_file=local, user_file=user, trusted=trusted)

    assert settings().lookup("db") == (str(tmp_path / "team.db"), str(local)), "harmless settings are read at once"
    for name, flag in (("base_url", "--base-url"), ("templates", "--templates"), ("api_key_env", "--api-key-env")):
        with pytest.raises(UntrustedSetting, match=f"{local} sets {name}, .*calibrate config trust.*{flag}"):
            settings().get(name)
    assert settings(base_url="http://127.0.0.1:1/v1").get("base_url") == "http://127.0.0.1:1/v1", "a flag needs no trust"
    rows = {name: (value, source) for name, value, source in settings().rows()}
    assert rows["base_url"] == ("http://evil.example/v1", f"{local} (not trusted: `calibrate config trust` to use it)")

    trust_settings_file(local, trusted)
    assert settings().get("base_url") == "http://evil.example/v1"
    assert settings().get("templates") == [str(tmp_path / "prompts")]
    local.write_text('base_url = "http://evil.example/other"\n')
    with pytest.raises(UntrustedSetting):
        settings().get("base_url")  # trust ends when the file changes


def test_judge_in_a_folder_with_an_untrusted_base_url_asks_nothing_until_trusted(tmp_path, monkeypatch, demo_db):
    from tests.fake_openai import FakeOpenAI

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CALIBRATE_DB", raising=False)
    with FakeOpenAI() as server:
        (tmp_path / "calibrate.toml").write_text(f'db = "{demo_db}"\nbase_url = "{server.url}"\n')
        judge = ["judge", "--model", "m", "--limit", "2", "--api-key-env", "NO_SUCH_KEY"]
        refused = CliRunner().invoke(cli, judge)
        assert refused.exit_code == 1 and "sets base_url" in refused.output and "calibrate config trust" in refused.output
        assert server.count == 0
        assert CliRunner().invoke(cli, ["status"]).exit_code == 0, "commands that do not use it still work"
        shown = CliRunner().invoke(cli, ["config"])
        assert "not trusted" in shown.output
        trusted = CliRunner().invoke(cli, ["config", "trust"])
        assert trusted.exit_code == 0 and f"base_url = {server.url}" in trusted.output
        assert (tmp_path / "user-config" / "calibrate" / "trusted.json").is_file()
        judged = CliRunner().invoke(cli, judge)
        assert judged.exit_code == 0, judged.output
        assert server.count == 2


def test_the_annotator_default_is_what_annotate_help_says_and_config_names_where_it_came_from(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CALIBRATE_ANNOTATOR", raising=False)
    helped = " ".join(CliRunner().invoke(cli, ["annotate", "--help"]).output.split())
    assert "[default: $CALIBRATE_ANNOTATOR, calibrate.toml, else $USER, else 'annotator']" in helped

    def annotator() -> tuple[str, str]:
        rows = {r["setting"]: r for r in json.loads(CliRunner().invoke(cli, ["config", "--json"]).output)}
        return rows["annotator"]["value"], rows["annotator"]["from"]

    monkeypatch.setenv("USER", "bob")
    assert annotator() == ("bob", "$USER")
    monkeypatch.delenv("USER")
    assert annotator() == ("annotator", "default")
