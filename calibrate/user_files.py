"""Reading a text file the user hands over (a template folder's manifest and prompts, a settings
file, a keymap, a system prompt, guidelines, an annotators file), and writing the file a
command's `--out` names.

Each is read here, so that every one that cannot be used (bytes that are not UTF-8, TOML that
does not parse, a file that cannot be opened) gives one kind of message, naming the file, what
is wrong and what to do, instead of a traceback. Imported data files (JSONL, CSV, C3 trees) have
their own readers in `calibrate.formats`, which name the line as well. Every `--out` file is
written through `replaced_whole`, so that a command that fails leaves the file as it was.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from calibrate.model import CalibrateError


class UserFileError(CalibrateError):
    """A file the user named that cannot be read as the text it should hold."""


def decode_text(raw: bytes, path: Path | str, error: type[CalibrateError] = UserFileError) -> str:
    """`raw` (the bytes of `path`) as UTF-8 text; `error` naming the file and the first bad byte."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None


def read_text_file(path: Path | str, error: type[CalibrateError] = UserFileError) -> str:
    """The text of `path` (UTF-8, line endings read as Python's text mode does: CRLF and CR are
    LF), or `error` naming the file and what is wrong."""
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise error(f"{path}: cannot be read ({exc.strerror or exc})") from None


def parse_toml(text: str, path: Path | str, error: type[CalibrateError] = UserFileError) -> dict:
    """The TOML `text` of `path` as a table, or `error` naming the file and where the syntax breaks."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: not valid TOML ({exc})") from None


def read_toml_file(path: Path | str, error: type[CalibrateError] = UserFileError) -> dict:
    """The table a TOML file holds, or `error` naming the file and what is wrong."""
    return parse_toml(read_text_file(path, error), path, error)


def read_keymap(path: Path | str) -> dict[str, str]:
    """A keymap file: TOML of `"binding.id" = "keys"` lines (at the top or under [keymap]), as
    {binding id: comma-separated keys}; UserFileError naming the file and the key of a value that
    is not text."""
    data = read_toml_file(path)
    table = data.get("keymap", data)
    if not isinstance(table, dict):
        raise UserFileError(f'{path}: keymap must be a table of "binding.id" = "keys" lines')
    for binding, keys in table.items():
        if not isinstance(keys, str):
            shown = "a table" if isinstance(keys, dict) else repr(keys)
            raise UserFileError(f'{path}: {binding} = {shown}: expected the keys as a quoted text, '
                                f'e.g. "annotate.next" = "right,m"')
    return dict(table)


@contextmanager
def replaced_whole(path: Path) -> Iterator[Path]:
    """Where to write the whole of `path`: a new file beside it, renamed over it once the block
    ends without error, so that a command failing half way (a damaged database, a full disk)
    leaves an earlier `path` as it was and no partial file; the new file is removed on failure.
    It is not flushed to disk before the rename (an export of a million items is 600 MB: seconds
    of waiting on the disk), which a crash of the whole machine, not of the command, would need. It has the same ending as `path` (writers that choose the format by
    it) and, where `path` exists, its permissions. A link is followed (the file it names is
    replaced). Written directly: a file of /dev or /proc (/dev/stdout, /dev/fd/N: whatever the
    shell opened there, a pipe or a file appended to, stays the one written) and what is not a
    regular file (a named pipe). A write error names `path` (the system names a file only when
    it cannot open it)."""
    target = Path(os.path.realpath(path))
    if Path(os.path.realpath(path.parent)).parts[1:2] in (("dev",), ("proc",)) or (
            target.exists() and not target.is_file()):
        with _naming(path, path):
            yield path
        return
    part = target.with_name(f".{target.stem}.{secrets.token_hex(4)}.part{target.suffix}")
    with _naming(path, part):
        os.close(os.open(part, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))  # 0o666 less the umask, as open() gives
        try:
            if target.exists():
                shutil.copymode(target, part)
            yield part
            os.replace(part, target)
        except BaseException:
            part.unlink(missing_ok=True)
            raise


@contextmanager
def _naming(path: Path, written: Path) -> Iterator[None]:
    """An OSError inside names `path`, where it names no file or the file `written` in its place."""
    try:
        yield
    except OSError as exc:
        if exc.filename is None or exc.filename == str(written):
            exc.filename = str(path)
        raise
