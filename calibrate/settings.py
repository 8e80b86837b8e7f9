"""One settings object: where each setting comes from, in one order, for every command.

A setting is taken from the command-line flag, else its environment variable, else
`./calibrate.toml`, else `config.toml` in the user's config folder, else its default.
`calibrate config` prints each effective value and where it came from, so nobody has to guess
why the app opened another database or labels as another annotator.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from calibrate.model import CalibrateError
from calibrate.redact import redact_url

CONFIG_NAME = "calibrate.toml"
APP_NAME = "calibrate"


class SettingsError(CalibrateError):
    """A config file that cannot be read, or a key it should not have."""


@dataclass(frozen=True)
class Setting:
    name: str
    env: str | None
    help: str
    is_list: bool = False

    def default(self):
        if self.name == "db":
            return "calibrate.db"
        if self.name == "annotator":
            return os.environ.get("USER") or "annotator"
        if self.name == "api_key_env":
            return "OPENAI_API_KEY"
        return [] if self.is_list else None


SETTINGS = {
    s.name: s
    for s in (
        Setting("db", "CALIBRATE_DB", "the SQLite file"),
        Setting("annotator", "CALIBRATE_ANNOTATOR", "who is labelling"),
        Setting("keymap", "CALIBRATE_KEYMAP", "TOML file remapping the app's keys"),
        Setting("templates", "CALIBRATE_TEMPLATES", "extra template folders (os.pathsep-separated in the variable)",
                is_list=True),
        Setting("base_url", "OPENAI_BASE_URL", "the OpenAI-compatible server the judge talks to"),
        Setting("api_key_env", None, "the environment variable holding the judge's API key"),
    )
}


def user_config_file() -> Path:
    """config.toml in the user's config folder (XDG on Linux, Application Support on macOS…)."""
    import click

    return Path(click.get_app_dir(APP_NAME)) / "config.toml"


def _read_toml(path: Path) -> dict:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"{path}: {exc}") from None
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise SettingsError(f"{path}: unknown setting {unknown[0]!r}; known: {', '.join(SETTINGS)}")
    return data


class Settings:
    """The effective settings. `flags` are the values given on the command line (None = not
    given); `environ` and the file locations can be replaced in tests."""

    def __init__(self, flags: dict | None = None, *, environ: dict | None = None,
                 files: list[Path] | None = None):
        self._flags = {k: v for k, v in (flags or {}).items() if v not in (None, (), [])}
        self._environ = os.environ if environ is None else environ
        self._files = [(path, _read_toml(path)) for path in (files if files is not None else self._default_files())
                       if path.is_file()]

    @staticmethod
    def _default_files() -> list[Path]:
        return [Path.cwd() / CONFIG_NAME, user_config_file()]

    def with_flags(self, **flags) -> Settings:
        """These settings with more command-line values (a subcommand's own flags)."""
        merged = Settings.__new__(Settings)
        merged._flags = {**self._flags, **{k: v for k, v in flags.items() if v not in (None, (), [])}}
        merged._environ, merged._files = self._environ, self._files
        return merged

    def lookup(self, name: str) -> tuple[object, str]:
        """(value, where it came from) for one setting."""
        setting = SETTINGS[name]
        if name in self._flags:
            value = self._flags[name]
            return (list(value) if setting.is_list else value), "command line"
        if setting.env and self._environ.get(setting.env):
            raw = self._environ[setting.env]
            value = [p for p in raw.split(os.pathsep) if p] if setting.is_list else raw
            return value, f"${setting.env}"
        for path, data in self._files:
            if name in data:
                value = data[name]
                if setting.is_list and isinstance(value, str):
                    value = [value]
                if setting.is_list:
                    value = [str((path.parent / v).resolve()) for v in value]
                elif name in ("db", "keymap"):
                    value = str((path.parent / value).resolve()) if not Path(value).is_absolute() else value
                return value, str(path)
        return setting.default(), "default"

    def get(self, name: str):
        """The effective value of one setting."""
        return self.lookup(name)[0]

    def rows(self) -> list[tuple[str, str, str]]:
        """(setting, value, source) for `calibrate config`."""
        out = []
        for name, setting in SETTINGS.items():
            value, source = self.lookup(name)
            shown = os.pathsep.join(value) if setting.is_list else ("" if value is None else str(value))
            if name == "base_url":
                shown = redact_url(shown)
            out.append((name, shown, source))
        return out
