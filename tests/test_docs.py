"""The documentation: docs/cli.md is every command's own help, regenerated with cog, and it is
up to date; every command and subcommand has its section and its `--help` works anywhere."""

from __future__ import annotations

from pathlib import Path

import click
from click.testing import CliRunner
from cogapp import Cog

from calibrate.cli import cli

DOCS = Path(__file__).resolve().parent.parent / "docs"


def command_paths(command: click.Command = cli, path: tuple[str, ...] = ()):
    yield path
    if isinstance(command, click.Group):
        for name, sub in command.commands.items():
            yield from command_paths(sub, (*path, name))


def test_the_cli_reference_is_what_the_commands_say_today():
    status = Cog().main(["cog", "--check", str(DOCS / "cli.md")])
    assert status == 0, "docs/cli.md is out of date: run `.venv/bin/cog -r docs/cli.md`"


def test_every_command_and_subcommand_has_its_section():
    text = (DOCS / "cli.md").read_text(encoding="utf-8")
    headings = {line[3:].strip() for line in text.splitlines() if line.startswith("## ")}
    wanted = {" ".join(("calibrate", *path)) for path in command_paths()}
    assert len(wanted) > 25
    assert wanted <= headings, f"missing from docs/cli.md: {sorted(wanted - headings)}"


def test_every_help_works_in_a_folder_without_a_database(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for path in command_paths():
        result = CliRunner().invoke(cli, [*path, "--help"], prog_name="calibrate")
        assert result.exit_code == 0, f"calibrate {' '.join(path)} --help: {result.output}"
        assert result.output.startswith(f"Usage: calibrate {' '.join(path)}".rstrip()), result.output
    assert list(tmp_path.iterdir()) == []


def test_the_worked_template_folder_in_docs_templates_md_imports_and_renders(tmp_path):
    import json
    import re

    from tests.conftest import Calibrate

    doc = (DOCS / "templates.md").read_text(encoding="utf-8")
    blocks = dict(re.findall(r"```(toml|jinja)\n(.*?)```", doc, re.S))
    folder = tmp_path / "my-templates" / "factcheck"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(blocks["toml"], encoding="utf-8")
    (folder / "claim.j2").write_text(blocks["jinja"], encoding="utf-8")
    (folder / "system.txt").write_text("You check facts.\n", encoding="utf-8")
    lines = tmp_path / "claims.jsonl"
    lines.write_text(json.dumps({"id": "1", "claim": "Water boils at 100 C.", "evidence": ["At 1 atm, 100 C."],
                                 "response": "Yes.", "gold": "yes"}) + "\n", encoding="utf-8")
    run = Calibrate(tmp_path / "t.db")
    run("--templates", str(tmp_path / "my-templates"), "import", "jsonl", str(lines), "--task", "mine/factcheck",
        "--lang", "en", "--reference-field", "gold")
    prompt = run("--templates", str(tmp_path / "my-templates"), "render", "1").output
    assert "Claim: Water boils at 100 C.\nEvidence:\n- At 1 atm, 100 C.\n" in prompt
    assert "[system]\nYou check facts." in prompt


def test_docs_templates_md_lists_every_manifest_key_calibrate_accepts_and_no_other():
    """A key not in the code is refused as unknown, so the tables in docs/templates.md are exactly
    what a manifest may hold: at the top, then in a [[template]] entry."""
    import re

    from calibrate.templates import ENTRY_KEYS, MANIFEST_KEYS

    doc = (DOCS / "templates.md").read_text(encoding="utf-8")
    top, entry = (doc.split(heading, 1)[1].split("\n\n", 2)[1] for heading in
                  ("At the top of `manifest.toml`:", "Each `[[template]]` entry:"))
    keys = [re.findall(r"^\| `\[*(\w+)\]*` \|", table, re.M) for table in (top, entry)]
    assert sorted(keys[0]) == sorted(MANIFEST_KEYS) and sorted(keys[1]) == sorted(ENTRY_KEYS)
