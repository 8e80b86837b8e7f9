"""Every seed prompt renders byte-for-byte as the seed documents word it."""

from __future__ import annotations

import re

import pytest

from calibrate.templates import TemplateError, TemplateSet
from tests.conftest import SEEDS

C3_SEED = (SEEDS / "000_46516683696cec49.txt").read_text(encoding="utf-8")
RUBRIC_SEED = (SEEDS / "003_aee5e0ba0bf015f7.txt").read_text(encoding="utf-8")
SUPERGLUE_SEED = (SEEDS / "004_9e40e9492d39547a.txt").read_text(encoding="utf-8")

C3_BLOCKS = re.findall(r"```(?:text)?\n(.*?)\n```", C3_SEED, re.S)
SUPERGLUE_BLOCKS = re.findall(r"\*\*Prompt Template[^\n]*\n```\n(.*?)\n```", SUPERGLUE_SEED, re.S)

# The seed elides "more of the same" with a "..." line in the two repeating templates; a
# rendering with two turns / two interpretations is the seed text without that line.
ELISIONS = ("\n...\n\n", "...  \n", "...\n")


def without_elision(text: str) -> str:
    for elision in ELISIONS:
        if elision in text:
            return text.replace(elision, "\n" if elision == "\n...\n\n" else "", 1)
    return text


EN = {"<origin instance>": "content", "<reference answer>": None, "<response from SDM>": "response"}

# template id, task, seed block index, fields filled with the seed's own placeholder tokens
C3_CASES = [
    ("c3/en/heterograph", "c3/heterograph", 1,
     {"content": "<origin instance>", "problem": "<qusestion>", "notation": "<reference answer>", "response": "<response from SDM>"}),
    ("c3/en/lexical", "c3/lexical", 3,
     {"content": "<origin instance>", "notation": "<reference answer>", "response": "<response from SDM>"}),
    ("c3/en/syntactic", "c3/syntactic", 4,
     {"content": "<origin instance>", "response": "<response from SDM>",
      "notation": {"ambiguity": "<ambiguity>", "interpretations": ["<interpretations 1>", "<interpretations 2>"]}}),
    ("c3/en/omission-detection", "c3/omission-detection", 5, {"content": "<origin instance>", "response": "<response from SDM>"}),
    ("c3/en/omission-completion", "c3/omission-completion", 6,
     {"content": "<origin instance>", "notation": "<reference answer>", "response": "<response from SDM>"}),
    ("c3/en/coreference-detection", "c3/coreference-detection", 7, {"content": "<origin instance>", "response": "<response from SDM>"}),
    ("c3/en/coreference-resolution", "c3/coreference-resolution", 8,
     {"content": "<origin instance>", "problem": "<question>", "answer": "<reference answer>", "response": "<response from SDM>"}),
    ("c3/en/multi-turn", "c3/multi-turn", 9,
     {"turns": ["<first input from C3Benchmark>", "<last input from C3Benchmark>"],
      "response": ["<first response from SDM>", "<last response from SDM>"]}),
    ("c3/zh/phonological", "c3/pause", 11,
     {"content": "<origin instance>", "annotation": "<reference answer>", "response": "<response from SDM>"}),
    ("c3/zh/semantic", "c3/semantic", 12,
     {"content": "<origin instance>", "annotation": "<reference answer>", "response": "<response from SDM>"}),
    ("c3/zh/omission-detection", "c3/omission-detection", 13, {"history": ["<origin instance>"], "response": "<response from SDM>"}),
    ("c3/zh/omission-completion", "c3/omission-completion", 14,
     {"history": ["<origin instance>"], "omission_complete": "<reference answer>", "response": "<response from SDM>"}),
    ("c3/zh/coreference-detection", "c3/coreference-detection", 15, {"history": ["<origin instance>"], "response": "<response from SDM>"}),
    ("c3/zh/coreference-resolution", "c3/coreference-resolution", 16,
     {"history": ["<origin instance>"], "coreference_complete": "<reference answer>", "response": "<response from SDM>"}),
    ("c3/zh/multi-turn", "c3/multi-turn", 17,
     {"history": ["<The first input from C3Benchmark>"], "question": "<The last input from C3Benchmark>",
      "response": ["<The first response from SDM>", "<The last response from SDM>"]}),
]

SUPERGLUE_CASES = [
    ("superglue/boolq", 0, ["passage", "question"]),
    ("superglue/copa", 1, ["question", "premise", "choice1", "choice2"]),
    ("superglue/cb", 2, ["premise", "hypothesis"]),
    ("superglue/rte", 3, ["premise", "hypothesis"]),
    ("superglue/wic", 4, ["word", "sentence1", "sentence2"]),
    ("superglue/wsc", 5, ["text"]),
    ("superglue/multirc", 6, ["passage", "question", "answer"]),
    ("superglue/record", 7, ["passage", "query", "entities", "answers"]),
    ("superglue/axb", 8, ["sentence1", "sentence2"]),
    ("superglue/axg", 9, ["premise", "hypothesis"]),
]


@pytest.mark.parametrize(("template_id", "task", "block", "fields"), C3_CASES, ids=[c[0] for c in C3_CASES])
def test_c3_template_renders_seed_text_exactly(templates, template_id, task, block, fields):
    rendered = templates.get(template_id).render(task, fields).user
    assert rendered == without_elision(C3_BLOCKS[block])


@pytest.mark.parametrize(("task", "word"), [("c3/pause", "pauses"), ("c3/stress", "stress"), ("c3/intonation", "intonation")])
def test_pause_stress_intonation_fill_in_the_phenomenon_word(templates, task, word):
    fields = {"content": "<origin instance>", "notation": "<reference answer>", "response": "<response from SDM>"}
    rendered = templates.for_task(task, "en").render(task, fields).user
    assert rendered == C3_BLOCKS[2].replace("<pauses/stress/intonation>", word)


@pytest.mark.parametrize(("lang", "block"), [("en", 0), ("zh", 10)])
def test_system_prompts_are_the_seed_text(templates, lang, block):
    for template in templates.templates.values():
        if template.family == "c3" and template.lang == lang and template.has_prompt:
            assert template.system == C3_BLOCKS[block], template.id


def test_rubric_renders_seed_with_python_format_braces(templates):
    tokens = {name: "{" + name + "}" for name in ("question", "content", "answer", "llm_answer", "llm_reasoning")}
    rendered = templates.get("rubric/reference").render("rubric/reference", tokens).user
    # The seed is a str.format template: {{ and }} are literal braces, {name} a placeholder.
    assert rendered == RUBRIC_SEED.replace("{{", "{").replace("}}", "}")
    assert '"score_answer": 分数' in rendered


@pytest.mark.parametrize(("template_id", "block", "names"), SUPERGLUE_CASES, ids=[c[0] for c in SUPERGLUE_CASES])
def test_superglue_template_renders_seed_text_exactly(templates, template_id, block, names):
    fields = {name: "{{" + name + "}}" for name in names}
    if template_id == "superglue/wsc":
        fields["target"] = {"span1_text": "{{span1_text}}", "span2_text": "{{span2_text}}"}
    rendered = templates.get(template_id).render(template_id, fields).user
    assert rendered == SUPERGLUE_BLOCKS[block]


def test_superglue_seed_examples_render_from_their_fields(templates):
    examples = re.findall(r"\*\*Example:\*\*\n```\n(.*?)\n```", SUPERGLUE_SEED, re.S)
    copa = {"question": "cause", "premise": "My body cast a shadow over the grass.",
            "choice1": "The sun was rising.", "choice2": "The grass was cut."}
    wsc = {"text": "Mark told Pete many lies about himself, which Pete included in his book. He should have been more skeptical.",
           "target": {"span1_text": "Mark", "span2_text": "He"}}
    assert templates.get("superglue/copa").render("superglue/copa", copa).user == examples[1]
    assert templates.get("superglue/wsc").render("superglue/wsc", wsc).user == examples[3]


@pytest.mark.parametrize("n", [1, 2, 5])
def test_syntactic_renders_any_number_of_interpretations(templates, n):
    meanings = [f"meaning number {k}" for k in range(1, n + 1)]
    fields = {"content": "S", "response": "R", "notation": {"ambiguity": "A", "interpretations": meanings}}
    rendered = templates.get("c3/en/syntactic").render("c3/syntactic", fields).user
    for k, meaning in enumerate(meanings, 1):
        assert f"The {k} meaning of this sentence is:\n{meaning}\n" in rendered
    assert f"The {n + 1} meaning" not in rendered
    assert rendered.count("meaning of this sentence is:") == n


@pytest.mark.parametrize("n", [1, 2, 5])
def test_multi_turn_renders_any_number_of_turns(templates, n):
    en = templates.get("c3/en/multi-turn").render("c3/multi-turn", {"turns": [f"q{k}" for k in range(n)], "response": [f"a{k}" for k in range(n)]}).user
    assert [line for line in en.splitlines() if line.startswith(("A: ", "B: "))] == [
        x for k in range(n) for x in (f"A: q{k}  ", f"B: a{k}  ")
    ]
    zh = templates.get("c3/zh/multi-turn").render(
        "c3/multi-turn", {"history": [f"问{k}" for k in range(n - 1)], "question": "最后", "response": [f"答{k}" for k in range(n)]}
    ).user
    turns = [line for line in zh.splitlines() if line.startswith(("甲说：", "乙说："))]
    assert len(turns) == 2 * n and turns[-2] == "甲说：最后" and turns[-1] == f"乙说：答{n - 1}"


def test_missing_field_names_template_and_field(templates):
    with pytest.raises(TemplateError, match=r"c3/en/heterograph.*'problem'"):
        templates.get("c3/en/heterograph").render("c3/heterograph", {"content": "x", "notation": "y", "response": "z"})


def test_no_html_escaping_and_whitespace_kept(templates):
    fields = {"content": "<b>&amp; 'x'</b>\n  indented  ", "notation": "n", "response": "r"}
    rendered = templates.get("c3/en/lexical").render("c3/lexical", fields).user
    assert "<b>&amp; 'x'</b>\n  indented  \n" in rendered


def test_official_c3_variant_matches_the_scripts_formatting(templates):
    system = templates.get("c3-official/en/heterograph").system
    assert system.endswith("grammatical structure analysis and so on in English spoken conversations.")
    fields = {"content": "C", "problem": "P", "notation": "N", "response": "R"}
    user = templates.get("c3-official/en/heterograph").render("c3/heterograph", fields).user
    for value in "CPNR":
        assert f"\n```\n{value}\n```\n" in user
    syn = templates.get("c3-official/en/syntactic").render(
        "c3/syntactic", {"content": "C", "response": "R", "notation": {"ambiguity": "A", "interpretations": ["I1", "I2"]}}
    ).user
    assert "```\nA\n```\n\nThe 1 meaning of this sentence is:\n```\nI1\n```\nThe 2 meaning of this sentence is:\n```\nI2\n```\nA student" in syn
    mt = templates.get("c3-official/en/multi-turn").render("c3/multi-turn", {"turns": ["q1", "q2"], "response": ["a1", "a2"]}).user
    assert "dialogue:\n\nA:\n```\nq1\n```\nB:\n```\na1\n```\nA:\n```\nq2\n```\nB:\n```\na2\n```\nPlease analyze" in mt
    zh = templates.get("c3-official/zh/multi-turn").render("c3/multi-turn", {"history": ["问"], "question": "再问", "response": ["答", "再答"]}).user
    assert "\n甲说：\n```\n问\n```\n乙说：\n```\n答\n```\n甲说：\n```\n再问\n```" in zh


def test_every_task_id_of_the_foundation_has_a_template(templates):
    en = ["heterograph", "pause", "stress", "intonation", "lexical", "syntactic", "omission-detection",
          "omission-completion", "coreference-detection", "coreference-resolution", "multi-turn", "generation"]
    zh_only = ["heteronym", "tone", "semantic", "generation-pause", "generation-heteronym", "generation-tone"]
    for name in en:
        assert templates.knows(f"c3/{name}", "en"), name
    for name in zh_only + ["heterograph", "pause", "omission-detection", "omission-completion",
                           "coreference-detection", "coreference-resolution", "multi-turn"]:
        assert templates.knows(f"c3/{name}", "zh"), name
    for name in ["boolq", "copa", "cb", "rte", "wic", "wsc", "multirc", "record", "axb", "axg"]:
        assert templates.knows(f"superglue/{name}", "en"), name
    assert templates.knows("rubric/reference", "zh")


def test_every_bundled_template_passes_the_checks_a_users_folder_gets_when_it_loads(templates):
    """The bundled templates are checked as they are first rendered, not loaded: each reads no
    other file and reads the item's fields (c3-official's too)."""
    prompts = [t for t in templates.templates.values() if t.has_prompt]
    assert len(prompts) > 40 and any(t.family == "c3-official" for t in prompts)
    for template in prompts:
        assert template.syntax.body, template.id


def test_editing_a_template_makes_a_new_version(tmp_path):
    folder = tmp_path / "mine" / "custom"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'family = "custom"\n[fields]\ncontent = "text"\n[[template]]\nid = "custom/en/lexical"\nfile = "lexical.j2"\nlang = "en"\n'
        'tasks = ["c3/lexical"]\nrequired = ["content"]\nverdict = "yes_no_en"\n'
    )
    (folder / "lexical.j2").write_text("Judge {{ content }}")
    first = TemplateSet([tmp_path / "mine"]).get("custom/en/lexical")
    (folder / "lexical.j2").write_text("Judge this: {{ content }}")
    second = TemplateSet([tmp_path / "mine"]).get("custom/en/lexical")
    assert first.version != second.version
    assert second.render("c3/lexical", {"content": "x"}).user == "Judge this: x"


def test_user_template_folder_takes_over_the_task(tmp_path, templates):
    folder = tmp_path / "mine" / "custom"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text(
        'family = "custom"\n[[template]]\nid = "custom/en/lexical"\nfile = "l.j2"\nlang = "en"\n'
        'tasks = ["c3/lexical"]\nverdict = "yes_no_en"\n'
    )
    (folder / "l.j2").write_text("mine: {{ content }}")
    both = TemplateSet([tmp_path / "mine"])
    assert both.for_task("c3/lexical", "en").id == "custom/en/lexical"
    assert both.for_task("c3/heterograph", "en").id == "c3/en/heterograph"


def test_a_family_says_what_its_prompts_are_sent_with(tmp_path, templates):
    assert templates.request_defaults("c3-official") == {"temperature": 0, "max_tokens": 2048}
    assert templates.request_defaults("c3") == {}
    with pytest.raises(TemplateError, match="unknown template family 'nope'"):
        templates.request_defaults("nope")
    folder = tmp_path / "mine" / "custom"
    folder.mkdir(parents=True)
    (folder / "manifest.toml").write_text('family = "custom"\n[request]\ntop_p = 0.9\n')
    with pytest.raises(TemplateError, match=r"\[request\] takes temperature, max_tokens"):
        TemplateSet([tmp_path / "mine"])


# -- a template is untrusted code: the sandbox -------------------------------------------------

def custom_template(tmp_path, text: str):
    """A user template folder whose one template (for c3/lexical, en) is `text`."""
    folder = tmp_path / "mine" / "custom"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "manifest.toml").write_text(
        'family = "custom"\n[[template]]\nid = "custom/en/lexical"\nfile = "l.j2"\nlang = "en"\n'
        'tasks = ["c3/lexical"]\nverdict = "yes_no_en"\n'
    )
    (folder / "l.j2").write_text(text, encoding="utf-8")
    return tmp_path / "mine"


def test_a_syntax_error_in_a_prompt_names_its_file_and_line(tmp_path):
    folder = custom_template(tmp_path, "Content:\n{{ content }} {{ unclosed")
    with pytest.raises(TemplateError) as refused:
        TemplateSet([folder])
    assert str(refused.value).startswith(f"template custom/en/lexical ({folder / 'custom' / 'l.j2'}): line 2: ")


def escapes(marker) -> dict[str, str]:
    """Known ways out of Jinja to Python, each creating `marker` if it ever ran."""
    run = f"popen('touch {marker}').read()"
    return {
        "cycler globals": f"{{{{ cycler.__init__.__globals__.os.{run} }}}}",
        "self globals": f"{{{{ self.__init__.__globals__.__builtins__.__import__('os').{run} }}}}",
        "lipsum globals": f"{{{{ lipsum.__globals__['os'].{run} }}}}",
        "str mro": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
        "getitem": "{{ content['__class__'] }}",
        "joiner": f"{{{{ joiner.__init__.__globals__.os.{run} }}}}",
    }


@pytest.mark.parametrize("name", list(escapes("m")))
def test_a_template_naming_pythons_internals_is_refused_when_loaded(tmp_path, name):
    marker = tmp_path / "ran"
    folder = custom_template(tmp_path, escapes(marker)[name])
    with pytest.raises(TemplateError, match=r"template custom/en/lexical .*line 1: refused: a template may not use '_"):
        TemplateSet([folder])
    assert not marker.exists()


RENDER_ESCAPES = {
    "config (Flask's)": ("{{ config.items() }}", "missing field ('config' is undefined)"),
    "format string": ("{{ '{0.__class__.__mro__}'.format(content) }}", "refused: access to attribute '__class__'"),
    "attr filter": ("{{ (content|attr('__class__')) }}", "refused: access to attribute '__class__'"),
    "map attribute": ("{{ [content]|map(attribute='__class__.__mro__')|list }}", "refused: access to attribute '__class__'"),
    "list mutation": ("{{ content }}{% set x = [] %}{{ x.append(1) }}", "refused: access to attribute 'append'"),
    "namespace": ("{% set ns = namespace(s='x') %}{{ ns.s }}", "'namespace' is undefined"),
    "range memory": ("{{ content }}{% for i in range(10**9) %}x{% endfor %}", "refused: range's argument would be 1,000,000,000 long"),
    "range of the allowed size": ("{{ content }}{% for i in range(100001) %}{% endfor %}", "refused: Range too big"),
    "repetition": ("{{ content }}{{ 'a' * 10**9 }}", "refused: a repetition would be 1,000,000,000 long"),
    "power": ("{{ content }}{{ 10 ** (10 ** 10) }}", "refused: a power's digits"),
    "format width": ("{{ content }}{{ '{:>999999999}'.format(1) }}", "refused: a format width"),
    "percent width": ("{{ content }}{{ '%999999999d' % 1 }}", "refused: a %-format width"),
    "percent star": ("{{ content }}{{ '%*d' % (9, 1) }}", "refused: a %-format width taken from the arguments"),
    "filter width": ("{{ content|center(999999999) }}", "refused: center's argument"),
    "method width": ("{{ content.ljust(999999999) }}", "refused: ljust's argument"),
    "replace": ("{{ content.replace('', 'x'.ljust(9999999)) }}", "refused: the replaced text"),
    "doubling": ("{{ content }}{% set a = 'x'.ljust(20000000) %}{% set a = a ~ a %}{{ a }}", "refused: the text would be 40,000,000 long"),
    "prompt size": ("{{ content }}{% for i in range(100000) %}{{ 'x'.ljust(1000) }}{% endfor %}", "refused: the text would be"),
    "join": ("{{ content }}{% set a = 'x'.ljust(9000000) %}{{ [a, a, a, a]|join }}", "refused: the joined text"),
    "division by zero": ("{{ content }}{{ 1 / 0 }}", "fields do not fit the template (ZeroDivisionError"),
}


@pytest.mark.parametrize("name", list(RENDER_ESCAPES))
def test_the_sandbox_refuses_escapes_and_huge_texts_naming_the_template(tmp_path, name):
    text, message = RENDER_ESCAPES[name]
    folder = custom_template(tmp_path, text)
    template = TemplateSet([folder]).get("custom/en/lexical")
    with pytest.raises(TemplateError, match=re.escape(message)) as refused:
        template.render("c3/lexical", {"content": "abc"})
    assert str(refused.value).startswith(f"template custom/en/lexical ({folder / 'custom' / 'l.j2'}): ")


def test_ordinary_template_features_still_render(tmp_path):
    text = ("{{ content|upper }} {{ '%s/%d' % (content, 2) }} {{ '{}!'.format(content) }} {{ (items + ['z'])|join(', ') }}"
            "{% for x in items %} {{ loop.index }}={{ x }}{% endfor %} {{ '-' * 3 }} {{ 2 ** 10 }} {{ dict(a=1)['a'] }}"
            "{% set block %}[{{ content }}]{% endset %} {{ block ~ '.' }}")
    template = TemplateSet([custom_template(tmp_path, text)]).get("custom/en/lexical")
    assert template.render("c3/lexical", {"content": "abc", "items": ["x", "y"]}).user == (
        "ABC abc/2 abc! x, y, z 1=x 2=y --- 1024 1 [abc].")


def test_a_template_with_a_syntax_error_is_refused_with_its_line(tmp_path):
    with pytest.raises(TemplateError, match=r"template custom/en/lexical .*line 2: unexpected '}'"):
        TemplateSet([custom_template(tmp_path, "fine\n{{ content }} }}{{ }")])


def test_judge_with_a_hostile_template_runs_nothing_and_asks_nothing(tmp_path, demo_db):
    from tests.conftest import Calibrate
    from tests.fake_openai import FakeOpenAI

    marker = tmp_path / "ran"
    folder = custom_template(tmp_path, escapes(marker)["cycler globals"])
    with FakeOpenAI() as server:
        out = Calibrate(demo_db)("--templates", str(folder), "judge", "--model", "m", "--base-url", server.url, ok=False)
    assert out.exit_code == 1 and "Error: template custom/en/lexical" in out.output and "refused" in out.output
    assert "Traceback" not in out.output and server.count == 0 and not marker.exists()


def test_a_template_set_that_has_rendered_goes_to_another_process_and_renders_the_same():
    """The escalate and informative queues send the templates to a child process (pickled)."""
    import pickle

    templates = TemplateSet()
    fields = {"content": "c", "notation": "n", "response": "r"}
    here = templates.for_task("c3/lexical", "en").render("c3/lexical", fields)
    there = pickle.loads(pickle.dumps(templates)).for_task("c3/lexical", "en").render("c3/lexical", fields)
    assert (there.system, there.user) == (here.system, here.user)
