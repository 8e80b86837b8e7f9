"""Reading C3's reference tree with a spoken dialogue model's response tree: `import c3`.

The reference tree (one JSON list per phenomenon, `C3_LAYOUT`) pairs with the response tree by
list index; an item's source id is `<reference path without .json>/<index>`, and its system is
the spoken dialogue model that wrote the responses. Responses are read as C3's evaluate.py reads
them (text mode: CRLF and CR become LF; a UTF-8 byte-order mark stays part of the text), so a
prompt rendered here is the one that script sends. What the import takes as it is but would
surprise (an entry that script passes over, an empty response or reference value) is said
beside the summary (`_TreeNotes`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from calibrate.audio import probe_clip
from calibrate.formats import (
    UPDATE_ADVICE,
    BadInput,
    ImportFailed,
    Progress,
    Record,
    read_json_list,
)
from calibrate.formats.c3 import C3Part, c3_parts_under, default_system
from calibrate.model import Item, NewItem, counted
from calibrate.names import listing
from calibrate.validate import type_of


def _read_text(path: Path) -> str:
    """A response as C3's evaluate.py reads it (`open(path).read()`, universal newlines: CRLF
    and a lone CR become LF), decoded strictly as UTF-8."""
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ImportFailed(f"{path}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _indexed(folder: Path, suffix: str) -> tuple[dict[int, Path], list[str]]:
    """The files <i><suffix> of a folder (suffix "": the folders <i>) by index, named as C3's
    evaluate.py reads them (`str(i) + ".txt"`: no leading zero, so `1.txt` is item 1), and the
    names of the others that look numbered (`01.txt`), each with the file of its index beside it
    ("01.txt beside 1.txt"): no item's response, as evaluate.py never reads them."""
    found: dict[int, Path] = {}
    odd: list[Path] = []
    for path in folder.iterdir():
        if (path.suffix == suffix or (not suffix and path.is_dir())) and path.stem.isdigit():
            if path.stem == str(int(path.stem)):
                found[int(path.stem)] = path
            else:
                odd.append(path)
    return found, sorted(f"{p.name} beside {found[int(p.stem)].name}" if int(p.stem) in found else p.name for p in odd)


def _numbered(folder: Path, suffix: str = ".txt") -> list[Path]:
    """<0..n-1><suffix> in a folder, failing if the numbering has a gap or a name C3's
    evaluate.py does not read (`01.txt`)."""
    found, odd = _indexed(folder, suffix)
    if odd:
        raise ImportFailed(f"{folder}: {', '.join(odd)}: C3's evaluate.py reads <i>{suffix} without leading zeros, so "
                           "no turn is read from there (remove or rename it)")
    names = [found[k] for k in sorted(found)]
    for expected, path in enumerate(names):
        if int(path.stem) != expected:
            raise ImportFailed(f"{folder}: response {expected}{suffix} is missing (found {path.name})")
    return names


def _responses(part: C3Part, responses_root: Path, count: int) -> list | BadInput:
    """The responses of a phenomenon's `count` items, from <index>.txt (a dialogue: <index>/,
    a file per turn), or the bad input that the folder is missing or does not pair with the
    reference index by index (naming the first files missing and the ones no item has)."""
    folder = responses_root / part.responses
    if not folder.is_dir():
        return BadInput(str(folder), f"response folder is missing for {part.reference}: none of its "
                                     f"{counted(count, 'item')} is imported", count)
    suffix = "" if part.multi_turn else ".txt"
    found, odd = _indexed(folder, suffix)
    missing, extra = sorted(set(range(count)) - set(found)), sorted(set(found) - set(range(count)))
    if missing or extra or odd:
        kind = "dialogue folders" if part.multi_turn else "response files"
        named = lambda indexes: listing([f"{k}{suffix}" for k in indexes], 3)  # noqa: E731
        problems = [f"missing {named(missing)}"] * bool(missing) + [f"no item for {named(extra)}"] * bool(extra) + [
            f"no item for {listing(odd, 3)}: C3's evaluate.py reads <i>{suffix} without leading zeros"] * bool(odd)
        return BadInput(str(folder), f"{len(found) + len(odd)} {kind} but {part.reference} lists {counted(count, 'item')} "
                                     f"({'; '.join(problems)}); responses pair with the reference by index: none "
                                     f"of its {counted(count, 'item')} is imported", count)
    files = [found[k] for k in range(count)]
    if part.multi_turn:
        return [[_read_text(p) for p in _numbered(d)] for d in files]
    return [_read_text(p) for p in files]


def _fields(part: C3Part, lang: str, entry, response, where: str, folder: Path) -> dict | BadInput:
    """The item's fields from its reference entry and its response (a dialogue: the responses
    of its turns, from `folder`)."""
    if part.multi_turn:
        turns = entry if lang == "en" else (entry.get("history") if isinstance(entry, dict) else None)
        if not isinstance(turns, list) or not all(isinstance(t, str) for t in turns):
            what = "a list of user turns" if lang == "en" else "an object with a 'history' list"
            return BadInput(where, f"expected {what}")
        expected = len(turns) + (1 if lang == "zh" else 0)
        if len(response) != expected:
            return BadInput(where, f"dialogue has {expected} user turns but {folder} holds "
                                   f"{counted(len(response), 'response file')} (one per turn: 0.txt, 1.txt, …)")
        if lang == "en":
            return {"turns": turns, "response": response}
        return {**entry, "response": response}
    if not isinstance(entry, dict):
        return BadInput(where, f"expected a JSON object, got {type_of(entry)}")
    return {**entry, "response": response}


def _audio(part: C3Part, audio_root: Path | None, index: int, turns: int) -> tuple:
    """The .wav of each response .txt (one per turn for a dialogue), at the same relative path
    under `audio_root`; none for a text-only tree (`audio_root` None)."""
    if audio_root is None:
        return ()
    folder = f"{part.responses}/{index}"
    if part.multi_turn:
        return tuple(probe_clip(f"turn {t + 1}", audio_root, f"{folder}/{t}.wav") for t in range(turns))
    return (probe_clip("response", audio_root, f"{folder}.wav"),)


def c3_audio_root(responses_root: Path, audio_root: Path | None = None) -> Path | None:
    """Where the responses' .wav files are: `audio_root` (a tree of its own, as C3's
    evaluate.py needs: it counts every file of a response folder as a response), else beside
    the .txt files; None when that folder holds no .wav at all (a text-only tree)."""
    root = Path(audio_root if audio_root is not None else responses_root)
    if audio_root is not None and not root.is_dir():
        raise ImportFailed(f"{root}: not a folder")
    return root if next(root.rglob("*.wav"), None) is not None else None


def c3_parts(reference_root: Path, lang: str) -> list[C3Part]:
    """The phenomena whose reference file exists under `reference_root`."""
    return c3_parts_under(reference_root, lang, lambda part: part.reference, "reference")


def c3_records(
    reference_root: Path, responses_root: Path, lang: str, progress: Progress | None = None, system: str | None = None,
    audio_root: Path | None = None, with_audio: bool = True, notes: list[str] | None = None,
) -> Iterator[Record | BadInput]:
    """Items of every phenomenon whose reference file exists under `reference_root`, the
    responses of `system` (default: `default_system`), each with its audio (probed,
    or the reason it is missing) at the response's relative path under `audio_root` (default:
    beside the response), unless `with_audio` is off (a text-only tree); `progress` is told of
    each phenomenon file done. What is imported but would surprise is said in `notes`, once the
    records are all read."""
    reference_root, responses_root = Path(reference_root), Path(responses_root)
    parts = c3_parts(reference_root, lang)
    if not responses_root.is_dir():
        raise ImportFailed(f"{responses_root}: not a folder")
    system = default_system(responses_root, "responses")[0] if system is None else system
    audio_root = (Path(audio_root) if audio_root is not None else responses_root) if with_audio else None
    seen = _TreeNotes()
    for part in parts:
        entries = read_json_list(reference_root / part.reference)
        responses = _responses(part, responses_root, len(entries))
        if isinstance(responses, BadInput):  # the phenomenon is passed over (--skip-bad), or the import fails
            yield responses
            entries = responses = []
        for index, (entry, response) in enumerate(zip(entries, responses, strict=True)):
            where = f"{reference_root / part.reference}[{index}]"
            folder = responses_root / part.responses / str(index)
            fields = _fields(part, lang, entry, response, where, folder)
            if isinstance(fields, BadInput):
                yield fields
                continue
            seen.add(part, lang, index, where, fields, folder)
            audio = _audio(part, audio_root, index, len(response) if part.multi_turn else 1)
            yield Record(NewItem(part.task, lang, f"{part.source_prefix}/{index}", fields, system=system), where,
                         audio=audio)
        if progress:
            progress(1)
    if notes is not None:
        notes += seen.notes()


class _TreeNotes:
    """What `import c3` takes as it is but says, as C3's evaluate.py would treat it otherwise
    or a judge would be asked about nothing: a reference entry repeating an earlier one's value
    by which that script passes a record over (`C3Part.resume_key`), empty responses and empty
    reference values."""

    SHOWN = 3  # the first few empty values named

    def __init__(self) -> None:
        self.first: dict[tuple[str, str], int] = {}  # (reference file, value) -> the first index holding it
        self.repeats: dict[str, list[str]] = {}  # reference file (where) -> "[2] repeats [0]"
        self.empty_responses: list[str] = []
        self.empty_values: list[str] = []
        self.said: set[str] = set()  # the reference entries looked at: two phenomena share omission's and coreference's

    def add(self, part: C3Part, lang: str, index: int, where: str, fields: dict, folder: Path) -> None:
        response = fields["response"]
        turns = response if part.multi_turn else [response]
        self.empty_responses += [str(folder / f"{k}.txt") if part.multi_turn else f"{folder}.txt"
                                 for k, text in enumerate(turns) if not text.strip()]
        if where in self.said:
            return
        self.said.add(where)
        values = fields["turns"] if "turns" in fields else {k: v for k, v in fields.items() if k != "response"}
        named = enumerate(values) if isinstance(values, list) else values.items()
        self.empty_values += [f"{where} {'turn ' + str(k + 1) if isinstance(k, int) else repr(k)}"
                              for k, v in named if isinstance(v, str) and not v.strip()]
        if part.resume_key(lang) is None:
            return
        first_turn = fields.get("turns", fields.get("history")) or [None]
        value = json.dumps(first_turn[0] if part.multi_turn else fields.get("notation"), ensure_ascii=False)
        file = where.rpartition("[")[0]
        earlier = self.first.setdefault((file, value), index)
        if earlier != index:
            self.repeats.setdefault(file, []).append(f"[{index}] repeats [{earlier}]")

    def notes(self) -> list[str]:
        out = []
        for file, repeats in self.repeats.items():
            what = "first user turn" if "multi-turn" in file else "notation"
            out.append(f"{file}: {listing(repeats, 5)} ({'its' if len(repeats) == 1 else 'their'} {what}): C3's "
                       f"evaluate.py passes over a record whose {what} it has written already, so it judges only the "
                       "earlier one (imported all the same)")
        if self.empty_responses:
            out.append(f"{counted(len(self.empty_responses), 'empty response')} "
                       f"({listing(self.empty_responses, self.SHOWN)}): imported; a judge is asked about an empty "
                       "answer")
        if self.empty_values:
            out.append(f"{counted(len(self.empty_values), 'empty reference value')} "
                       f"({listing(self.empty_values, self.SHOWN)}): imported; a judge is asked with it empty")
        return out


def c3_conflict_advice(stored: Item, item: NewItem) -> str:
    """A C3 tree's item whose content differs from the stored one of its identity
    (`ConflictAdvice`): another model's responses under the same system name (two models'
    folders of the same name), this model's new responses, or, where the stored item lacks
    fields of the tree's, an item made from result files imported before the tree."""
    reference = lambda fields: {k: v for k, v in fields.items() if k != "response"}  # noqa: E731
    if reference(stored.fields) == reference(item.fields):
        return (f" (its response): if these are another model's responses, in a folder of the same name, name that model "
                f"with --system; if this model's responses changed, {UPDATE_ADVICE}")
    lacking = sorted(set(item.fields) - set(stored.fields))
    if lacking:
        return (f" (the stored item has no {', '.join(repr(k) for k in lacking)}, as one made from C3 result files "
                "has): import the C3 tree into a fresh database first and the result files after it, which then judge "
                "the tree's items (--update would leave their judgments on the items the result files made)")
    changed = next(k for k in sorted({*item.fields, *stored.fields} - {"response"})
                   if stored.fields.get(k) != item.fields.get(k))
    return (f" (its {changed!r}): if this tree is another release of C3, import it into a database of its own; if "
            f"the reference was corrected, {UPDATE_ADVICE}")
