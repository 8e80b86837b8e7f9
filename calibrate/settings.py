"""One settings object: where each setting comes from, in one order, for every command.

A setting is taken from the command-line flag, else its environment variable, else
`./calibrate.toml`, else `config.toml` in the user's config folder, else its default.
`calibrate config` prints each effective value and where it came from, so nobody has to guess
why the app opened another database or labels as another annotator.

The current folder's `calibrate.toml` may come with a shared data folder, written by someone
else. Some settings would then act on whoever works there: `templates` decide every prompt and
verdict, `base_url` is where the API key and every item are sent, `api_key_env` which secret is
sent. A folder's file sets those only once the user trusts it (`calibrate config trust`, which
records the file's path and a hash of its bytes in the user config folder); until then, or once
the file changes, reading such a setting from it is an error saying so, and `calibrate config`
shows the value as not trusted. The user's own config file is always trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from calibrate.model import CalibrateError
from calibrate.redact import redact_url
from calibrate.user_files import decode_text, parse_toml, replaced_whole

CONFIG_NAME = "calibrate.toml"
APP_NAME = "calibrate"


class SettingsError(CalibrateError):
    """A config file that cannot be read, or a key it should not have."""


class UntrustedSetting(SettingsError):
    """A setting that a folder's settings file sets, which it may not until the user trusts it."""

    def __init__(self, message: str, path: Path):
        super().__init__(message)
        self.path = path


@dataclass(frozen=True)
class Setting:
    name: str
    env: str | None
    help: str
    is_list: bool = False
    needs_trust: bool = False  # a folder's settings file sets it only once trusted
    flag: str | None = None
    example: str = ""  # a value as a settings file writes it, for messages

    def default(self):
        if self.name == "db":
            return "calibrate.db"
        if self.name == "annotator":
            return "annotator"
        if self.name == "api_key_env":
            return "OPENAI_API_KEY"
        return [] if self.is_list else None


SETTINGS = {
    s.name: s
    for s in (
        Setting("db", "CALIBRATE_DB", "the SQLite file", example="calibrate.db"),
        Setting("annotator", "CALIBRATE_ANNOTATOR", "who is labelling", example="ana"),
        Setting("keymap", "CALIBRATE_KEYMAP", "TOML file remapping the app's keys", example="keys.toml"),
        Setting("templates", "CALIBRATE_TEMPLATES", "extra template folders (os.pathsep-separated in the variable)",
                is_list=True, needs_trust=True, flag="--templates", example="my-templates"),
        Setting("base_url", "OPENAI_BASE_URL", "the OpenAI-compatible server the judge talks to", needs_trust=True,
                flag="--base-url", example="http://127.0.0.1:8000/v1"),
        Setting("api_key_env", None, "the environment variable holding the judge's API key", needs_trust=True,
                flag="--api-key-env", example="OPENAI_API_KEY"),
    )
}


def user_config_file() -> Path:
    """config.toml in the user's config folder (XDG on Linux, Application Support on macOS…)."""
    import click

    return Path(click.get_app_dir(APP_NAME)) / "config.toml"


def trusted_list_path() -> Path:
    """Where `calibrate config trust` records the folder settings files the user trusts."""
    return user_config_file().parent / "trusted.json"


@dataclass(frozen=True)
class SettingsFile:
    path: Path
    data: dict
    sha256: str
    trusted: bool


def _read_toml(path: Path, trusted: dict[str, str] | None) -> SettingsFile:
    """A settings file; `trusted` maps the folder files the user trusts to their hashes (None:
    the user's own file, always trusted)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise SettingsError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    data = parse_toml(decode_text(raw, path, SettingsError), path, SettingsError)
    unknown = sorted(set(data) - set(SETTINGS))
    if unknown:
        raise SettingsError(f"{path}: unknown setting {unknown[0]!r}; known: {', '.join(SETTINGS)}")
    for name, value in data.items():
        _check_type(SETTINGS[name], value, path)
    sha256 = hashlib.sha256(raw).hexdigest()
    return SettingsFile(path, data, sha256, trusted is None or trusted.get(str(path.resolve())) == sha256)


def _check_type(setting: Setting, value, path: Path) -> None:
    """SettingsError naming the file and the key when a settings file gives `setting` a value of
    the wrong type (every setting is text; a list setting takes a list of texts too)."""
    if isinstance(value, str) or setting.is_list and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return
    expected = "a quoted text or a list of them" if setting.is_list else "a quoted text"
    shown = "a table" if isinstance(value, dict) else repr(value)
    raise SettingsError(f"{path}: {setting.name} = {shown}: expected {expected}, "
                        f'e.g. {setting.name} = "{setting.example}"')


def read_trusted(store: Path) -> dict[str, str]:
    """{absolute path: sha256} of the folder settings files the user trusts."""
    try:
        data = json.loads(store.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SettingsError(f"{store}: {exc}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"{store}: not a JSON object of path: sha256")
    return data


def trust_settings_file(path: Path, store: Path | None = None) -> SettingsFile:
    """Record `path` (as its bytes are now) as trusted, in `store` (default: trusted_list_path())."""
    store = store or trusted_list_path()
    settings_file = _read_toml(Path(path), {})
    trusted = read_trusted(store)
    trusted[str(Path(path).resolve())] = settings_file.sha256
    store.parent.mkdir(parents=True, exist_ok=True)
    with replaced_whole(store) as part:
        part.write_text(json.dumps(trusted, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return settings_file


class Settings:
    """The effective settings. `flags` are the values given on the command line (None = not
    given); `environ` and the file locations can be replaced in tests."""

    def __init__(self, flags: dict | None = None, *, environ: dict | None = None, folder_file: Path | None = None,
                 user_file: Path | None = None, trusted: Path | None = None):
        """`folder_file` (default ./calibrate.toml) needs trust for some settings, recorded in
        `trusted` (default: trusted_list_path()); `user_file` (default: the user config) does not."""
        self._flags = {k: v for k, v in (flags or {}).items() if v not in (None, (), [])}
        self._environ = os.environ if environ is None else environ
        folder_file = folder_file or Path.cwd() / CONFIG_NAME
        user_file = user_file or user_config_file()
        self._files: list[SettingsFile] = []
        if folder_file.is_file():
            self._files.append(_read_toml(folder_file, read_trusted(trusted or trusted_list_path())))
        if user_file.is_file():
            self._files.append(_read_toml(user_file, None))

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
        for settings_file in self._files:
            path, data = settings_file.path, settings_file.data
            if name in data:
                if setting.needs_trust and not settings_file.trusted:
                    raise UntrustedSetting(
                        f"{path} sets {name}, which a folder's settings file may set only once you trust it: "
                        f"read the file, then run `calibrate config trust` (or give {setting.flag})", path)
                value = data[name]
                if setting.is_list and isinstance(value, str):
                    value = [value]
                if setting.is_list:
                    value = [str((path.parent / v).resolve()) for v in value]
                elif name in ("db", "keymap"):
                    value = str((path.parent / value).resolve()) if not Path(value).is_absolute() else value
                return value, str(path)
        if name == "annotator" and self._environ.get("USER"):  # the login name, before the last resort
            return self._environ["USER"], "$USER"
        return setting.default(), "default"

    def with_trust(self, path: Path) -> Settings:
        """These settings as if the folder file `path` were trusted (to show what it would set)."""
        shown = self.with_flags()
        shown._files = [SettingsFile(f.path, f.data, f.sha256, f.trusted or f.path == path) for f in self._files]
        return shown

    def get(self, name: str):
        """The effective value of one setting."""
        return self.lookup(name)[0]

    def rows(self) -> list[tuple[str, str, str]]:
        """(setting, value, source) for `calibrate config`."""
        out = []
        for name, setting in SETTINGS.items():
            try:
                value, source = self.lookup(name)
            except UntrustedSetting as exc:
                value = self.with_trust(exc.path).lookup(name)[0]
                source = f"{exc.path} (not trusted: `calibrate config trust` to use it)"
            shown = os.pathsep.join(value) if setting.is_list else ("" if value is None else str(value))
            if name == "base_url":
                shown = redact_url(shown)
            out.append((name, shown, source))
        return out
