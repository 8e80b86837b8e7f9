"""A template folder from someone else: manifests that clash, reach outside their folder, hold
misspelt keys, values of the wrong type or huge system prompts, and templates that read another
file, read none of the item's fields, or loop or recurse without end. Each is refused with a
message naming the file, from loading the folder, `render`, `judge` and the app's `p`, never
with a traceback or a hang."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jinja2
import pytest

import calibrate.templates as templates_module
from calibrate.model import NewItem
from calibrate.resources import bundled
from calibrate.store import Store
from calibrate.templates import MAX_TEXT, TemplateError, TemplateSet
from tests.conftest import Calibrate
from tests.tui_helpers import make_app, rows, screen_text

MANIFEST = ('family = "fc"\n[[template]]\nid = "fc/en"\nfile = "claim.j2"\nlang = "en"\ntasks = ["mine/fc"]\n'
            'required = ["claim", "response"]\nverdict = "yes_no_en"\n')
LOOP = ("{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
        "{{ claim }}{{ response }}")


def family(root: Path, name: str = "fc", manifest: str = MANIFEST, text: str = "Claim: {{ claim }} {{ response }}") -> Path:
    """A family folder `root/name` with this manifest and its claim.j2; returns the manifest."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "claim.j2").write_text(text, encoding="utf-8")
    (folder / "manifest.toml").write_text(manifest, encoding="utf-8")
    return folder / "manifest.toml"


@pytest.fixture
def fc_db(tmp_path) -> Path:
    """A database with two items of mine/fc."""
    db = tmp_path / "fc.db"
    store = Store(db)
    store.add_items([NewItem("mine/fc", "en", f"q{i}", {"claim": f"claim {i}", "response": "yes"}) for i in (1, 2)])
    store.close()
    return db


def refused(*folders: Path) -> str:
    with pytest.raises(TemplateError) as error:
        TemplateSet(folders)
    return str(error.value)


# -- ids and tasks: one template per id, one per task and language in a manifest ----------------

def test_an_id_of_a_bundled_template_is_refused_naming_both_manifests(tmp_path, demo_db):
    manifest = family(tmp_path / "mine", "evil", MANIFEST.replace('"fc/en"', '"superglue/rte"'))
    message = refused(tmp_path / "mine")
    assert message.startswith(f"{manifest} template #1: template id 'superglue/rte' is already the id of a template in ")
    assert str(bundled("templates") / "superglue" / "manifest.toml") in message
    out = Calibrate(demo_db)("--templates", str(tmp_path / "mine"), "render", "31", ok=False)
    assert out.exit_code == 1 and "'superglue/rte' is already the id" in out.output and "Traceback" not in out.output


def test_one_id_in_two_families_of_a_folder_is_refused_naming_both_manifests(tmp_path):
    first = family(tmp_path / "mine", "a")
    second = family(tmp_path / "mine", "b", MANIFEST.replace('"fc"', '"b"'), "DUP {{ claim }}")
    assert refused(tmp_path / "mine") == (f"{second} template #1: template id 'fc/en' is already the id of a template "
                                          f"in {first}; give each template its own id")


def test_one_id_twice_in_a_manifest_is_refused(tmp_path):
    manifest = family(tmp_path / "mine", manifest=MANIFEST + MANIFEST[MANIFEST.index("[[template]]"):].replace(
        "mine/fc", "mine/other"))
    assert refused(tmp_path / "mine") == (f"{manifest} template #2: template id 'fc/en' is already the id of a "
                                          "template in this manifest; give each template its own id")


def test_two_templates_for_one_task_and_language_in_a_manifest_are_refused_naming_both(tmp_path):
    manifest = family(tmp_path / "mine", manifest=MANIFEST + MANIFEST[MANIFEST.index("[[template]]"):].replace(
        "fc/en", "fc/en2"))
    assert refused(tmp_path / "mine") == (f"{manifest} template #2: task mine/fc in en is already served by template "
                                          "fc/en of this manifest; one template per task and language")


def test_a_folder_still_serves_a_bundled_task_under_its_own_id_and_variant_picks_the_bundled_one(tmp_path, demo_db):
    family(tmp_path / "mine", "mine", MANIFEST.replace('"fc"', '"mine"').replace("mine/fc", "superglue/rte")
           .replace('required = ["claim", "response"]', 'required = ["response"]'), "MINE {{ response }}")
    calibrate = Calibrate(demo_db)
    batch = tmp_path / "b.jsonl"
    calibrate("--templates", str(tmp_path / "mine"), "judge", "--model", "m", "--task", "superglue/rte",
              "--export-batch", str(batch))
    assert batch.read_text().count("MINE ") == len(batch.read_text().splitlines()) > 0, "the folder took over the task"
    assert "MINE " in calibrate("--templates", str(tmp_path / "mine"), "render", "31", "--variant", "mine").output
    bundled_prompt = calibrate("--templates", str(tmp_path / "mine"), "render", "31", "--variant", "superglue").output
    assert "MINE" not in bundled_prompt and bundled_prompt == calibrate("render", "31", "--variant", "superglue").output


def test_the_same_folder_named_twice_is_loaded_once(tmp_path, fc_db):
    family(tmp_path / "mine")
    folder = str(tmp_path / "mine")
    assert "Claim: claim 1 yes" in Calibrate(fc_db)("--templates", folder, "--templates", folder, "render", "1").output


# -- paths a manifest names stay in the family's folder ---------------------------------------

@pytest.mark.parametrize(("key", "name"), [("system", "/etc/passwd"), ("file", "../../../../../../../../etc/hostname"),
                                           ("system", "../secret.txt"), ("file", "link.j2")])
def test_a_file_outside_the_familys_folder_is_refused(tmp_path, fc_db, key, name):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "secret.txt").write_text("the key")
    manifest = family(tmp_path / "mine")
    (manifest.parent / "link.j2").symlink_to(tmp_path / "mine" / "secret.txt")
    text = manifest.read_text().replace('file = "claim.j2"\n', "" if key == "file" else 'file = "claim.j2"\n')
    manifest.write_text(text.replace('lang = "en"', f'{key} = "{name}"\nlang = "en"'))
    assert refused(tmp_path / "mine") == (f"{manifest} template #1: {key} {name!r} is outside the family's folder "
                                          f"{manifest.parent}; a manifest may only name files inside it")
    batch = tmp_path / "b.jsonl"
    out = Calibrate(fc_db)("--templates", str(tmp_path / "mine"), "judge", "--model", "m", "--export-batch", str(batch), ok=False)
    assert out.exit_code == 1 and "is outside the family's folder" in out.output and not batch.exists()


# -- manifest values of the wrong type ----------------------------------------------------------

TOP = MANIFEST.index("[[template]]")
WRONG_TYPES = {  # the manifest, whether the key is in the template entry, the message
    "template": ('family = "fc"\ntemplate = 5\n', False, "template must be a list of tables, not 5"),
    "fields": (MANIFEST[:TOP] + 'fields = "x"\n' + MANIFEST[TOP:], False, "fields must be a table, not 'x'"),
    "default": (MANIFEST[:TOP] + 'default = "false"\n' + MANIFEST[TOP:], False,
                "default must be a boolean (true or false), not 'false'"),
    "vars": (MANIFEST + 'vars = "x"\n', True, "vars must be a table, not 'x'"),
    "vars of a task": (MANIFEST + 'vars = { "mine/fc" = "x" }\n', True, "vars.mine/fc must be a table, not 'x'"),
    "tasks": (MANIFEST.replace('tasks = ["mine/fc"]', 'tasks = "mine/fc"'), True,
              "tasks must be a list of texts, not 'mine/fc'"),
    "required": (MANIFEST.replace('required = ["claim", "response"]', 'required = "claim"'), True,
                 "required must be a list of texts, not 'claim'"),
    "labels": (MANIFEST + "labels = [1, 2]\n", True, "labels must be a list of texts, not [1, 2]"),
    "id": (MANIFEST.replace('id = "fc/en"', "id = 5"), True, "id must be a text, not 5"),
}


@pytest.mark.parametrize("name", list(WRONG_TYPES))
def test_a_manifest_value_of_the_wrong_type_is_refused_naming_the_file_and_key(tmp_path, fc_db, name):
    text, in_entry, message = WRONG_TYPES[name]
    manifest = family(tmp_path / "mine", manifest=text)
    assert refused(tmp_path / "mine") == f"{manifest}{' template #1' if in_entry else ''}: {message}"
    out = Calibrate(fc_db)("--templates", str(tmp_path / "mine"), "templates", "list", ok=False)
    assert out.exit_code == 1 and message in out.output and "Traceback" not in out.output


# -- manifest keys: a misspelt one is refused, naming the key meant -----------------------------

UNKNOWN_KEYS = {  # the manifest, where the refusal points (the manifest or its entry), the message
    "[[templates]]": (MANIFEST.replace("[[template]]", "[[templates]]"), "",
                      "unknown key 'templates' (did you mean template?)"),
    "descripton": ('descripton = "x"\n' + MANIFEST, "", "unknown key 'descripton' (did you mean description?)"),
    "hiden_fields": (MANIFEST + 'hiden_fields = ["gold"]\n', " template #1",
                     "unknown key 'hiden_fields' (did you mean hidden_fields?)"),
    "requird": (MANIFEST.replace("required =", "requird ="), " template #1",
                "unknown key 'requird' (did you mean required?)"),
    "description in an entry": (MANIFEST + 'description = "x"\n', " template #1",
                                "unknown key 'description' (it belongs at the top of the manifest)"),
    "id at the top": ('id = "fc/en"\n' + MANIFEST, "", "unknown key 'id' (it belongs in a [[template]] entry)"),
    "empty manifest": ("", "", "defines no template; a manifest needs at least one [[template]] entry"),
    "no entry": ('family = "fc"\ndescription = "x"\n', "", "defines no template"),
}


@pytest.mark.parametrize("name", list(UNKNOWN_KEYS))
def test_a_misspelt_manifest_key_or_a_manifest_without_templates_is_refused_naming_it(tmp_path, name):
    text, entry, message = UNKNOWN_KEYS[name]
    manifest = family(tmp_path / "mine", manifest=text)
    claims = tmp_path / "claims.jsonl"
    claims.write_text('{"id": "a", "claim": "Sky is blue", "response": "yes"}\n')
    calibrate = Calibrate(tmp_path / "t.db")
    out = calibrate("--templates", str(tmp_path / "mine"), "templates", "list", ok=False)
    assert out.exit_code == 1 and f"Error: {manifest}{entry}: {message}" in " ".join(out.output.split())
    out = calibrate("--templates", str(tmp_path / "mine"), "import", "jsonl", str(claims), "--task", "mine/fc",
                    "--lang", "en", ok=False)
    assert out.exit_code == 1 and message in " ".join(out.output.split()) and "unknown task" not in out.output
    assert not (tmp_path / "t.db").exists()


# -- the prompt: the item's fields, from its own file --------------------------------------------

def test_a_field_one_tasks_vars_give_as_a_constant_is_still_read_from_the_items_of_another(tmp_path, fc_db):
    """`vars` give mine/ref the claim and response as constants; mine/fc's items bring theirs, so
    the prompt reads the item's fields (and shows its response) for them."""
    manifest = (MANIFEST.replace('tasks = ["mine/fc"]', 'tasks = ["mine/fc", "mine/ref"]')
                + 'vars = { "mine/ref" = { claim = "fixed", response = "fixed" } }\n')
    family(tmp_path / "mine", manifest=manifest)
    calibrate = Calibrate(fc_db)
    assert "fc/en" in calibrate("--templates", str(tmp_path / "mine"), "templates", "list").output
    assert "Claim: claim 1 yes" in calibrate("--templates", str(tmp_path / "mine"), "render", "1").output
    batch = tmp_path / "batch.jsonl"
    calibrate("--templates", str(tmp_path / "mine"), "judge", "--model", "m", "--export-batch", str(batch))
    asked = [json.loads(line)["body"]["messages"][-1]["content"] for line in batch.read_text().splitlines()]
    assert asked == ["Claim: claim 1 yes", "Claim: claim 2 yes"], "each item's own claim and response"


BLIND = "Is the claim true? End with 'The answer is: yes.' or 'The answer is: no.'"


@pytest.mark.parametrize("manifest, text", [
    (MANIFEST, BLIND),
    (MANIFEST + 'vars = { "mine/fc" = { topic = "geography" } }\n', "Is this {{ topic }} claim true?"),
], ids=["no field", "only a task constant"])
def test_a_prompt_that_reads_none_of_the_items_fields_is_refused_and_nothing_is_judged(tmp_path, fc_db, manifest,
                                                                                      text):
    family(tmp_path / "mine", manifest=manifest, text=text)
    calibrate = Calibrate(fc_db)
    batch = tmp_path / "batch.jsonl"
    said = []
    for command in (("templates", "list"), ("render", "1"), ("judge", "--model", "m", "--export-batch", str(batch))):
        out = calibrate("--templates", str(tmp_path / "mine"), *command, ok=False)
        said.append(" ".join(out.output.split()))
        assert out.exit_code == 1 and "Traceback" not in out.output
    assert said[0] == said[1] == said[2] == (
        f"Error: template fc/en ({tmp_path / 'mine' / 'fc' / 'claim.j2'}): refused: the prompt reads none of the "
        "item's fields (it requires claim, response), so every item would get the same prompt; show the item with "
        "{{ field }}")
    assert not batch.exists()


@pytest.mark.parametrize("tag", ['{% include "claim.j2" %}', '{% import "claim.j2" as other %}',
                                 '{% from "../secret.txt" import x %}', '{% extends "/etc/passwd" %}'])
def test_a_template_that_reads_another_file_is_refused_when_its_folder_loads(tmp_path, fc_db, tag):
    family(tmp_path / "mine", text=f"Claim:\n{tag}{{{{ claim }}}} {{{{ response }}}}")
    calibrate = Calibrate(fc_db)
    keyword = tag.split()[1]
    for command in (("templates", "list"), ("render", "1")):
        out = calibrate("--templates", str(tmp_path / "mine"), *command, ok=False)
        assert out.exit_code == 1 and " ".join(out.output.split()) == (
            f"Error: template fc/en ({tmp_path / 'mine' / 'fc' / 'claim.j2'}): line 2: refused: a template may not "
            f"use {{% {keyword} %}} (a prompt is its one file; it reads no other)")


# -- the system prompt is under the whole prompt's cap ------------------------------------------

def test_a_system_prompt_past_the_cap_is_refused_from_a_manifest_and_from_the_flag(tmp_path, fc_db):
    huge = tmp_path / "huge.txt"
    huge.write_text("x" * (MAX_TEXT + 1))
    manifest = family(tmp_path / "mine")
    (manifest.parent / "system.txt").write_text(huge.read_text())
    manifest.write_text(MANIFEST.replace('lang = "en"', 'system = "system.txt"\nlang = "en"'))
    assert refused(tmp_path / "mine") == (f"{manifest} template #1: the system prompt {manifest.parent / 'system.txt'} "
                                          f"is {MAX_TEXT + 1:,} characters long; a whole prompt may be at most {MAX_TEXT:,}")
    (manifest.parent / "system.txt").write_text("x" * (MAX_TEXT - 5))
    with pytest.raises(TemplateError, match=f"refused: the whole prompt, system prompt included, would be {MAX_TEXT + 5:,} long"):
        TemplateSet([tmp_path / "mine"]).get("fc/en").render("mine/fc", {"claim": "c", "response": "r"})
    manifest.write_text(MANIFEST)
    batch = tmp_path / "b.jsonl"
    out = Calibrate(fc_db)("--templates", str(tmp_path / "mine"), "judge", "--model", "m", "--system-prompt", str(huge),
                           "--export-batch", str(batch), ok=False)
    assert out.exit_code == 1 and not batch.exists()
    assert f"--system-prompt: the system prompt {huge} is {MAX_TEXT + 1:,} characters long" in " ".join(out.output.split())


# -- rendering: bounded in time, errors naming the file -----------------------------------------

def test_a_template_that_loops_for_ever_is_refused_naming_its_file(tmp_path):
    manifest = family(tmp_path / "mine", text=LOOP)
    template = TemplateSet([tmp_path / "mine"]).get("fc/en")
    with pytest.raises(TemplateError) as error:
        template.render("mine/fc", {"claim": "c", "response": "r"})
    assert re.fullmatch(rf"template fc/en \({re.escape(str(manifest.parent / 'claim.j2'))}\): refused: the template ran "
                        r"(more than 10,000,000 loop iterations and calls|longer than 5 seconds)", str(error.value))


@pytest.mark.parametrize("text", [
    "{% for i in range(100000) %}{% endfor %}{{ claim }}",
    "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(20) }}{{ claim }}",
    "{% for i in range(100000) %}{{ 'x'.upper() }}{% endfor %}{{ claim }}",
    "{% for i in range(100000) %}{{ 'x'|upper }}{% endfor %}{{ claim }}",
    "{% for i in range(3) recursive %}{% if loop.depth == 1 %}{{ loop(range(100000)) }}{% endif %}{% endfor %}{{ claim }}",
])
def test_loop_iterations_calls_and_filters_count_against_the_steps(tmp_path, monkeypatch, text):
    monkeypatch.setattr(templates_module, "MAX_STEPS", 50_000)
    family(tmp_path / "mine", text=text)
    with pytest.raises(TemplateError, match="refused: the template ran more than 50,000 loop iterations and calls"):
        TemplateSet([tmp_path / "mine"]).get("fc/en").render("mine/fc", {"claim": "c", "response": "r"})


def test_render_and_judge_refuse_a_looping_template_and_the_app_shows_why(tmp_path, fc_db, monkeypatch):
    monkeypatch.setattr(templates_module, "MAX_SECONDS", 0.5)
    family(tmp_path / "mine", text=LOOP)
    calibrate = Calibrate(fc_db)
    out = calibrate("--templates", str(tmp_path / "mine"), "render", "1", ok=False)
    assert out.exit_code == 1 and "claim.j2): refused: the template ran " in out.output
    renders = []
    monkeypatch.setattr(jinja2.Template, "render", lambda self, *a, render=jinja2.Template.render: renders.append(1) or render(self, *a))
    batch = tmp_path / "b.jsonl"
    out = calibrate("--templates", str(tmp_path / "mine"), "judge", "--model", "m", "--export-batch", str(batch), ok=False)
    said = " ".join(out.output.split())
    assert out.exit_code == 1 and re.search(r"2 items cannot be rendered \(template fc/en \(\S+claim\.j2\): refused: the "
                                            r"template ran [^)]+\): id 1, 2", said), said
    assert len(renders) == 1, "the other item of a template that ran out of time is not rendered again"


async def test_p_on_a_looping_template_shows_the_refusal_in_place_of_the_prompt(tmp_path, fc_db, monkeypatch):
    monkeypatch.setattr(templates_module, "MAX_SECONDS", 0.5)
    family(tmp_path / "mine", text=LOOP)
    app = make_app(fc_db, templates=TemplateSet([tmp_path / "mine"]))
    async with app.run_test(size=(200, 40)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "the judge prompt cannot be rendered: template fc/en (" in text and "refused: the template ran" in text
        await pilot.press("y")
        await pilot.pause()
    assert rows(fc_db) == [("label", "yes")], "the app still labels"


def test_a_macro_that_calls_itself_is_the_templates_fault(tmp_path):
    manifest = family(tmp_path / "mine", text="{% macro f() %}{{ f() }}{% endmacro %}{{ claim }}{{ f() }}")
    with pytest.raises(TemplateError) as error:
        TemplateSet([tmp_path / "mine"]).get("fc/en").render("mine/fc", {"claim": "c", "response": "r"})
    assert str(error.value) == (f"template fc/en ({manifest.parent / 'claim.j2'}): the template recurses without end "
                                "(a macro that calls itself?)")


def test_a_missing_field_names_the_templates_file(tmp_path, fc_db):
    family(tmp_path / "mine", text="{{ claim }} {{ evidence }}")
    out = Calibrate(fc_db)("--templates", str(tmp_path / "mine"), "render", "1", ok=False)
    assert out.exit_code == 1
    assert f"template fc/en ({tmp_path / 'mine' / 'fc' / 'claim.j2'}): missing field ('evidence' is undefined)" in \
        " ".join(out.output.split())
