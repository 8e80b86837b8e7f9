"""The annotation app, driven headless with Pilot: every key path, blind mode, markup safety."""

from __future__ import annotations

import asyncio
import json
import re
import time

import pytest

from calibrate.model import NewItem, NewJudgment
from calibrate.store import Store
from calibrate.templates import TemplateSet
from calibrate.tui.item_picker_screen import ItemPickerScreen
from calibrate.tui.stats_screen import StatsScreen
from calibrate.tui.text_screen import TextScreen
from calibrate.user_files import UserFileError
from tests.conftest import Calibrate, threads_using
from tests.tui_helpers import current_item_id, make_app, rows, screen_text, status, told

SIZE = (140, 40)


async def test_confirm_with_enter_and_space_records_the_judge_verdict(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        first = current_item_id(app)
        await pilot.press("enter")
        assert current_item_id(app) != first
        await pilot.press("space")
        assert "last: #" in status(app) and "agrees" in status(app)
    assert rows(demo_db) == [("confirm", "yes"), ("confirm", "no")]
    shown = rows(demo_db, "SELECT judgment_id IS NOT NULL, blind FROM annotations")
    assert shown == [(1, 0), (1, 0)]


async def test_y_and_n_label_english_and_chinese(demo_db):
    app = make_app(demo_db, task="c3/pause")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n", "y")
    assert rows(demo_db) == [("label", "no"), ("label", "是")]


async def test_digits_label_label_set_tasks(demo_db):
    app = make_app(demo_db, task="superglue/cb")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7", "y")  # out of range, and y on a three-label task: warnings, nothing stored
        assert rows(demo_db) == []
        await pilot.press("3")
    assert rows(demo_db) == [("label", "neutral")]


async def test_y_and_n_on_true_false_tasks_but_not_on_copa(demo_db):
    app = make_app(demo_db, task="superglue/boolq")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("n")
    copa = make_app(demo_db, task="superglue/copa")
    async with copa.run_test(size=SIZE) as pilot:
        await pilot.press("y", "2")
    assert rows(demo_db) == [("label", "False"), ("label", "2")]


async def test_override_flips_a_binary_verdict(demo_db):
    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("o")
    assert rows(demo_db) == [("override", "no")]


async def test_unparsed_verdict_cannot_be_confirmed(demo_db):
    app = make_app(demo_db, task="c3/stress")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("enter", "o")
        assert rows(demo_db) == []
        assert "UNPARSED" in screen_text(app)
        await pilot.press("n")
    assert rows(demo_db) == [("label", "no")]


async def test_score_form_for_rubric_items(demo_db):
    app = make_app(demo_db, task="rubric/reference")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        await pilot.press("enter", "enter")  # accept the judge's scores as they are
        await pilot.press("e")
        for _ in range(6):
            await pilot.press("backspace")
        await pilot.press(*"55.5", "enter")
        for _ in range(6):
            await pilot.press("backspace")
        await pilot.press(*"40", "enter")
    labels = [json.loads(label) for _, label in rows(demo_db)]
    assert labels[0] == {"score_answer": 48.5, "score_reasoning": 42.0}
    assert labels[1]["score_answer"] == 55.5


async def test_skip_flag_note_and_undo(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        first = current_item_id(app)
        await pilot.press("a", *"tricky one", "enter")
        await pilot.press("s")
        second = current_item_id(app)
        await pilot.press("f")
        await pilot.press("u")
        assert current_item_id(app) == second, "undo brings the flagged item back"
        await pilot.press("u")
        assert current_item_id(app) == first
        await pilot.press("u")
        await pilot.pause()
        assert "u undoes only its own" in " ".join(note.message for note in app._notifications)
    assert rows(demo_db, "SELECT action, note FROM annotations ORDER BY id") == [
        ("note", "tricky one"), ("skip", None), ("flag", None), ("undo", None), ("undo", None)]


async def test_j_next_and_k_previous_like_vim_and_arrows(demo_db):
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        first = current_item_id(app)
        await pilot.press("right")
        second = current_item_id(app)
        await pilot.press("j")
        third = current_item_id(app)
        assert len({first, second, third}) == 3
        await pilot.press("left")
        assert current_item_id(app) == second
        await pilot.press("k")
        assert current_item_id(app) == first
        await pilot.press("y")
        assert current_item_id(app) == second, "a decision moves on to the next item in history"
    assert rows(demo_db) == [("label", "yes")]


async def test_j_and_k_where_they_cannot_move_say_so_and_what_works(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")  # two items
    async with app.run_test(size=SIZE) as pilot:
        first = current_item_id(app)
        assert " k prev " not in screen_text(app).splitlines()[-1], "the key bar shows only the keys that work"
        await pilot.press("k")
        assert status(app).splitlines()[1] == " k: first of this session: j → goes on, H your labels, F your flags"
        await pilot.press("y")
        second = current_item_id(app)
        await pilot.press("j")  # the only item left: the queue comes back round to it
        await pilot.pause()
        assert current_item_id(app) == second
        assert status(app).splitlines()[2] == " j: no other item waits for you in this queue (k ← goes back)"
        await pilot.press("k")
        assert current_item_id(app) == first, "j did not put the item on screen in the history again"
    assert rows(demo_db) == [("label", "yes")]


async def test_p_opens_the_rendered_prompt_with_its_system_prompt(demo_db):
    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=SIZE) as pilot:
        assert "polysemy" not in screen_text(app)
        await pilot.press("p")
        await pilot.pause()
        text = screen_text(app)
        assert "This is a sentence that contains ambiguity caused by polysemy" in text
        assert "You are an expert proficient" in text


async def test_p_on_an_item_its_template_cannot_render_says_why(tmp_path):
    family = tmp_path / "mine" / "fc"
    family.mkdir(parents=True)
    (family / "manifest.toml").write_text('family = "fc"\ndescription = "x"\n[[template]]\nid = "fc/en"\n'
                                          'file = "claim.j2"\nlang = "en"\ntasks = ["mine/fc"]\n'
                                          'required = ["claim", "response"]\nverdict = "yes_no_en"\n')
    (family / "claim.j2").write_text("Claim: {{ claim }} Evidence: {{ evidence }} Answer: {{ response }}")
    db = tmp_path / "fc.db"
    Store(db).add_items([NewItem("mine/fc", "en", "a", {"claim": "sky is {{ green }}", "response": "yes"})])
    app = make_app(db, templates=TemplateSet([tmp_path / "mine"]))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        text = " ".join(screen_text(app).split())
        assert "(the judge prompt cannot be rendered: template fc/en (" in text
        assert "): missing field ('evidence' is undefined))" in text, "the template's file, then the reason"
        assert "humans decide it" not in text


async def test_at_80_by_24_the_open_prompt_leaves_the_item_the_verdict_and_the_keys_in_view(demo_db):
    app = make_app(demo_db, task="c3/heterograph")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("p")
        await pilot.pause()
        text = screen_text(app)
        assert "You are an expert proficient" in text, "the prompt is open"
        assert "The knight rode through the night." in text and "YES" in text, "the item and the verdict still show"
        assert "⏎ ok" in text and "q quit" in text, "the key bar still shows"
        assert app.screen.query_one("#item").region.height >= 6


async def test_ctrl_c_quits_as_q_does_and_keeps_every_decision(demo_db):
    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("y", "ctrl+c")
        await pilot.pause()
        assert app.return_code == 0, "the app is leaving"
    assert rows(demo_db) == [("label", "yes")]


async def test_the_note_dialog_says_how_to_leave_it_and_ctrl_c_there_quits(demo_db):
    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("a", *"half-typed")
        await pilot.pause()
        assert "Enter saves the note, Esc cancels" in screen_text(app)
        await pilot.press("ctrl+c")
        await pilot.pause()
        assert app.return_code == 0, "the app is leaving"
        await pilot.press("q", *"clear", "enter")  # typed next, in the shell: nothing of it is a note
    assert rows(demo_db) == []


async def test_filter_changes_the_queue(demo_db):
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("slash", *"task=c3/multi-turn lang=zh", "enter")
        await pilot.pause()
        view = app.screen.view
        assert (view.item.task, view.item.lang) == ("c3/multi-turn", "zh")
        assert "甲: 中国的首都是哪里？" in screen_text(app)


async def test_help_guidelines_and_stats_screens(demo_db):
    store = Store(demo_db)
    store.annotate(store.items(task="c3/lexical")[0].id, "someone", "label", label="yes")
    store.close()
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        assert isinstance(app.screen, TextScreen) and "annotate.confirm" in screen_text(app)
        await pilot.press("escape", "g")
        assert isinstance(app.screen, TextScreen) and "standard answer" in screen_text(app)
        assert "labels: y yes, n no" in screen_text(app), "the keys that label a yes/no item"
        await pilot.press("escape", "t")
        assert isinstance(app.screen, StatsScreen)
        await stats_shown(app, pilot)
        assert "c3/lexical" in screen_text(app)
        await pilot.press("escape", "q")
    assert app.return_code == 0


async def test_the_guidelines_name_the_digits_that_label_an_item_of_a_label_set(demo_db):
    app = make_app(demo_db, task="superglue/cb")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("g")
        assert "labels: 1 entailment, 2 contradiction, 3 neutral" in screen_text(app)


async def test_a_superglue_item_says_a_label_is_the_answer_the_response_gives_not_the_right_one(demo_db):
    app = make_app(demo_db, task="superglue/boolq")
    async with app.run_test(size=(120, 30)) as pilot:
        said = " ".join(str(app.screen.query_one("#verdict-meta").content).split())
        assert "label the answer the output below gives (True or False), not the one that is right: scores compare it with gold" in said
        await pilot.press("g")
        said = " ".join(screen_text(app).replace("│", " ").split())
        assert ("label the answer the system's response gives (True or False), not the one that is right: scores compare "
                "it with gold") in said
    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=(120, 30)):
        assert "not the one that is right" not in str(app.screen.query_one("#verdict-meta").content), "yes/no says right itself"


async def stats_table(db) -> tuple[list[list[str]], str]:
    """The rows of the stats screen (t) of the app on `db`, each cell as text, and its title."""
    app = make_app(db)
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("t")
        await stats_shown(app, pilot)
        table = app.screen.query_one("#stats-table")
        return ([[str(cell) for cell in table.get_row_at(k)] for k in range(table.row_count)],
                str(app.screen.query_one("#stats-title").content))


def judged_lexical_items(store: Store, prefix: str, n: int) -> list[int]:
    """The ids of `n` new c3/lexical items of sdm-alpha (source ids prefix/k) that demo-judge
    judged, "yes" on the odd ones."""
    ids, _ = store.add_items([NewItem("c3/lexical", "en", f"{prefix}/{k}", {"content": "c", "notation": "n",
                                                                         "response": "r"}, system="sdm-alpha")
                              for k in range(n)], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="demo-judge", judge_key="k", status="verdict",
                                     verdict="yes" if k % 2 else "no") for k, i in enumerate(ids)])
    return ids


async def test_the_stats_screen_gives_the_reports_figures_and_names_each_rubric_score(labelled_demo_db):
    demo_db = labelled_demo_db
    from calibrate.report import build_report, rows_of
    from calibrate.templates import TemplateSet

    store = Store(demo_db)
    for item in store.items(task="rubric/reference"):
        store.annotate(item.id, "ana", "label", label=json.dumps({"score_answer": 60, "score_reasoning": 50}))
    # a cell of 16 labelled items, enough for intervals (none is drawn from fewer than 10)
    ids = judged_lexical_items(store, "more", 16)
    for k, i in enumerate(ids):
        store.annotate(i, "ana", "label", label="yes" if k % 2 or k % 5 == 0 else "no")
    report = [row for _, _, row in rows_of(build_report(store, TemplateSet())) if row.n]
    store.close()
    shown, _ = await stats_table(demo_db)
    kappas = ["—" if r.kappa is None else f"{r.kappa:.2f}" + ("" if r.kappa_low is None else
                                                               f" [{r.kappa_low:.2f}, {r.kappa_high:.2f}]")
              for r in report]
    assert [row[6] for row in shown] == kappas, "the report's own figures, intervals included"
    assert any("[" in kappa for kappa in kappas)
    rubric = [row for row in shown if row[0] == "rubric/reference"]
    assert [row[3] for row in rubric] == ["ana · score_answer", "ana · score_reasoning"]
    assert all(row[9].startswith("MAE ") for row in rubric)


async def test_the_stats_screen_marks_an_approximate_ceiling_interval_as_the_report_does(demo_db):
    # twelve items two people labelled: the ceiling's interval at that size is approximate (the report marks it ~)
    store = Store(demo_db)
    ids = judged_lexical_items(store, "twice", 12)
    for name, flips in (("ana", (0,)), ("bob", (3, 4))):
        for k, i in enumerate(ids):
            store.annotate(i, name, "label", label=("no" if k % 2 else "yes") if k in flips else ("yes" if k % 2 else "no"))
    store.close()
    shown, title = await stats_table(demo_db)
    ceilings = [row[8] for row in shown]
    assert any(c.endswith("]~") for c in ceilings), ceilings
    assert "~ approximate interval (calibrate report says how)" in title


async def test_the_stats_screen_gives_the_rubric_ceilings_interval_where_pairs_share_items(three_scorers_db):
    # three people scored each of twelve items: the people's pairs share items, and their Spearman's
    # interval (which resamples items) shows as the report gives it, marked ~ where approximate
    from calibrate.report import build_report, rows_of
    from calibrate.templates import TemplateSet

    store = Store(three_scorers_db)
    report = [row for _, _, row in rows_of(build_report(store, TemplateSet())) if row.n]
    store.close()
    shown, _ = await stats_table(three_scorers_db)
    assert all(r.ceiling_low is not None for r in report), "each row's ceiling has its interval"
    expected = [f"{r.ceiling:.2f} [{r.ceiling_low:.2f}, {r.ceiling_high:.2f}]" + ("~" if r.ceiling_approximate else "")
                for r in report]
    assert [row[8] for row in shown] == expected and len(expected) == 8, "ana, bob, cy and gold, two scores each"


async def test_the_stats_screen_wraps_a_long_verdict_instead_of_cutting_it(labelled_demo_db):
    app = make_app(labelled_demo_db, annotator="ana")
    async with app.run_test(size=(160, 40)) as pilot:
        await pilot.press("t")
        await stats_shown(app, pilot)
        shown = re.sub(r"[\s│\u2580-\u259f]+", " ", screen_text(app))  # the table's lines, borders and scroll bars out
    assert "both raters used only '是': kappa is undefined (chance agreement is 1)" in shown


async def test_at_80_columns_the_stats_screen_shows_the_highlighted_rows_verdict_below_the_table(labelled_demo_db):
    app = make_app(labelled_demo_db, annotator="ana")
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("t")
        await stats_shown(app, pilot)
        table = app.screen.query_one("#stats-table")
        verdicts = [str(table.get_row_at(k)[-1]) for k in range(table.row_count)]
        below = app.screen.query_one("#stats-verdict")
        assert below.display and verdicts[0] in str(below.render())
        await pilot.press("down")
        await pilot.pause()
        assert verdicts[1] in str(below.render())
    app = make_app(labelled_demo_db, annotator="ana")
    async with app.run_test(size=(200, 50)) as pilot:  # wide enough to wrap the verdicts in their rows
        await pilot.press("t")
        await stats_shown(app, pilot)
        assert not app.screen.query_one("#stats-verdict").display


async def test_at_80_columns_the_stats_title_says_more_columns_are_to_the_right(labelled_demo_db):
    app = make_app(labelled_demo_db, annotator="ana")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("t")
        assert "(→ more columns, r refreshes, Esc closes)" in await stats_shown(app, pilot)
        for _ in range(12):
            await pilot.press("right")
        await pilot.pause()
        box = screen_text(app).splitlines()[3:-4]  # the table's rows, and the empty ones below
        assert not any(re.search("[\u258f\u258e\u258d\u258c\u258b\u258a\u2589]", line) for line in box), box
    app = make_app(labelled_demo_db, annotator="ana")
    async with app.run_test(size=(200, 50)) as pilot:  # every column in view
        await pilot.press("t")
        assert "more columns" not in await stats_shown(app, pilot)


async def test_the_stats_title_row_hides_the_finished_queue_below(demo_db):
    app = make_app(demo_db, task="superglue/boolq")
    async with app.run_test(size=(200, 50)) as pilot:
        await pilot.press("y", "y")
        assert "queue finished" in status(app)
        await pilot.press("t")
        await stats_shown(app, pilot)
        title_row = next(line for line in screen_text(app).splitlines() if "judge vs human agreement" in line)
    inside = title_row.split("judge vs human agreement")[0].rsplit("│", 1)[-1]  # from the box's left border on
    assert inside.strip() == "", f"the title row shows only the title: {title_row!r}"


async def stats_shown(app, pilot, seconds: float = 30) -> str:
    """The stats screen's title once its worker has worked the statistics out (or failed): the
    worker may not have started when the screen is pushed, so waiting for the workers that exist
    then is not enough."""
    deadline = time.monotonic() + seconds
    while "computing" in (title := str(app.screen.query_one("#stats-title").content)):
        assert time.monotonic() < deadline, "the statistics were never shown"
        await pilot.pause(0.05)
    await pilot.pause()  # and painted (a screenshot taken before shows the screen below)
    return title


async def test_stats_that_cannot_be_worked_out_are_said_so_and_the_app_goes_on(demo_db, monkeypatch):
    import calibrate.report

    def broken(*args, **kwargs):
        raise RuntimeError("disk I/O error")

    monkeypatch.setattr(calibrate.report, "build_report", broken)
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("t")
        assert "could not be worked out: disk I/O error" in await stats_shown(app, pilot)
        await pilot.press("escape", "y")
        assert len(rows(demo_db)) == 1, "labelling goes on after the failure"
        await pilot.press("q")
    assert app.return_code == 0


async def test_blind_mode_hides_the_verdict_until_labelled(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en", blind=True)
    async with app.run_test(size=SIZE) as pilot:
        text = screen_text(app)
        assert "verdict hidden" in text and "The answer is" not in text
        await pilot.press("enter")  # nothing to confirm blind
        assert rows(demo_db) == []
        await pilot.press("y")
        assert "judge said yes" in status(app), "the verdict is revealed once labelled"
        await pilot.press("left")
        assert "YES" in screen_text(app)
    assert rows(demo_db, "SELECT action, label, blind, judgment_id FROM annotations") == [("label", "yes", 1, None)]


async def test_keys_can_be_remapped(demo_db, tmp_path):
    keymap = tmp_path / "keys.toml"
    keymap.write_text('[keymap]\n"annotate.yes" = "1"\n"annotate.no" = "2"\n')
    app = make_app(demo_db, task="c3/lexical", keymap_file=keymap)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("y")
        assert rows(demo_db) == []
        await pilot.press("2")
    assert rows(demo_db) == [("label", "no")]


async def test_item_text_is_never_markup(tmp_path):
    db = tmp_path / "markup.db"
    store = Store(db)
    nasty = "[bold]not bold[/] [link=https://x]not a link[/link] [/] \x1b[31mnot red\x1b[0m"
    (item_id,), _ = store.add_items([NewItem("c3/lexical", "en", "m", {"content": nasty, "notation": "[red]n[/red]", "response": "[i]r"})], with_ids=True)
    store.add_judgments([NewJudgment(item_id=item_id, judge_name="j", judge_key="k", status="verdict", verdict="yes",
                                     raw_output="[blink]The answer is: yes.[/blink]")])
    store.close()
    app = make_app(db)
    async with app.run_test(size=SIZE):
        text = screen_text(app)
    assert "[bold]not bold[/] [link=https://x]not a link[/link] [/] \\x1b[31mnot red\\x1b[0m" in text
    assert "[red]n[/red]" in text and "[i]r" in text and "[blink]The answer is: yes.[/blink]" in text


async def test_two_apps_on_one_database_never_share_an_item(demo_db):
    first, second = make_app(demo_db, annotator="ana"), make_app(demo_db, annotator="bo")
    async with first.run_test(size=SIZE), second.run_test(size=SIZE):
        assert current_item_id(first) != current_item_id(second)


async def test_quit_releases_the_lease(demo_db):
    app = make_app(demo_db, annotator="ana")
    async with app.run_test(size=SIZE) as pilot:
        held = current_item_id(app)
        await pilot.press("q")
    other = make_app(demo_db, annotator="bo")
    async with other.run_test(size=SIZE):
        assert current_item_id(other) == held


@pytest.mark.parametrize("order", ["random", "stratified", "disagreement-first"])
async def test_queue_orders_run_in_the_app(demo_db, order):
    app = make_app(demo_db, order=order, seed=3)
    async with app.run_test(size=SIZE) as pilot:
        seen = [current_item_id(app)]
        for _ in range(4):
            await pilot.press("s")
            seen.append(current_item_id(app))
    assert len(set(seen)) == 5


async def test_a_user_template_declaring_scores_gets_the_score_form(tmp_path, score_templates):
    from calibrate.model import NewItem
    from calibrate.templates import TemplateSet
    from calibrate.tui.score_form import ScoreForm

    db = tmp_path / "essay.db"
    store = Store(db)
    store.add_items([NewItem("essay/score", "zh", "1", {"content": "文章"})])
    store.close()
    app = make_app(db, templates=TemplateSet([score_templates]))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("e")
        assert isinstance(app.screen, ScoreForm)
        await pilot.press(*"70", "enter", *"65.5", "enter")
    assert [json.loads(label) for _, label in rows(db)] == [{"score_answer": 70.0, "score_reasoning": 65.5}]


SMALL = (80, 24)
PASSAGE = " ".join(f"Sentence {k} tells more of the river's long history and of the towns on its banks." for k in range(1, 61))


@pytest.fixture
def long_db(tmp_path):
    """A BoolQ item with a 60-sentence passage, and one with a 10 MB passage and raw output."""
    db = tmp_path / "long.db"
    store = Store(db)
    huge = "word " * 2_000_000
    ids, _ = store.add_items([
        NewItem("superglue/boolq", "en", "long", {"question": "is the river long", "passage": PASSAGE,
                                                  "response": "True: RESPONSE-MARK the passage says so."}, "True"),
        NewItem("superglue/boolq", "en", "huge", {"question": "is it big", "passage": huge + "THE-END",
                                                  "response": "True"}, "True"),
    ], with_ids=True)
    store.add_judgments([NewJudgment(item_id=i, judge_name="rule", judge_key="r", status="verdict", verdict="True",
                                     raw_output=raw) for i, raw in zip(ids, ["True", huge], strict=True)])
    store.close()
    return db


def visible_item_text(app) -> str:
    """The item panel's lines that are on screen now."""
    return screen_text(app)


async def test_long_passage_is_folded_and_the_keyboard_brings_the_response_on_screen(long_db):
    app = make_app(long_db)
    async with app.run_test(size=SMALL) as pilot:
        panel = app.screen.query_one("#item")
        text = screen_text(app)
        assert "more characters: x shows all" in text and "Sentence 60" not in text
        assert "lines 1–16 of" in str(panel.border_subtitle)
        await pilot.press("pagedown")
        await pilot.pause()
        assert "RESPONSE-MARK" in screen_text(app) and panel.scroll_y > 0
        assert not str(panel.border_subtitle).startswith("lines 1–")
        await pilot.press("home", "x")
        await pilot.pause()
        assert "x shows all" not in screen_text(app)
        await pilot.press("end")
        await pilot.pause()
        assert "Sentence 60" in str(app.screen.query_one("#item-fields").content)
        assert "RESPONSE-MARK" in screen_text(app)


async def test_scroll_keys_work_whatever_has_focus_and_tab_picks_the_pane(long_db):
    app = make_app(long_db)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("j")  # the item with a 10 MB judge output
        raw = app.screen.query_one("#verdict-raw-scroll")
        item = app.screen.query_one("#item")
        await pilot.press("tab", "pagedown")
        await pilot.pause()
        assert raw.scroll_y > 0 and item.scroll_y == 0 and raw.has_class("reading")
        await pilot.press("tab", "pagedown")
        await pilot.pause()
        assert item.scroll_y > 0


async def test_a_ten_megabyte_field_is_shown_a_page_at_a_time(long_db):
    app = make_app(long_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("j", "x")
        await pilot.pause()
        fields = str(app.screen.query_one("#item-fields").content)
        assert "page 1/2001 of 10,000,007 characters" in fields and len(fields) < 6_000
        assert "the output goes on" in str(app.screen.query_one("#verdict-raw").content)
        await pilot.press("left_square_bracket", *["right_square_bracket"] * 3)
        assert "page 4/2001" in str(app.screen.query_one("#item-fields").content)
        app.screen.page = 1999
        await pilot.press("right_square_bracket", "right_square_bracket")
        assert "THE-END" in str(app.screen.query_one("#item-fields").content)


async def test_footer_shows_only_what_works_and_fits_80_columns(demo_db):
    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=SMALL) as pilot:
        footer = screen_text(app).splitlines()[-1]
        for entry in ("ok", "y yes", "n no", "o flip", "s skip", "f flag", "u undo", "j next", "/ filter",
                      "? help", "q quit"):
            assert entry in footer, (entry, footer)
        assert "k prev" not in footer, "nothing comes before the session's first item"
    async with make_app(demo_db, task="c3/heterograph", lang="en").run_test(size=SMALL) as pilot:
        await pilot.press("j")
        assert "j next k prev" in screen_text(pilot.app).splitlines()[-1], "the second item: k goes back"
    async with make_app(demo_db, task="c3/semantic", lang="zh").run_test(size=SMALL) as pilot:
        footer = screen_text(pilot.app).splitlines()[-1]
        assert "y 是 n 否" in footer and "yes" not in footer, "a Chinese item's own words for its two labels"
    blind = make_app(demo_db, task="c3/lexical", blind=True)
    async with blind.run_test(size=SMALL):
        footer = screen_text(blind).splitlines()[-1]
        assert "ok" not in footer and "flip" not in footer and "y yes" in footer
    cb = make_app(demo_db, task="superglue/cb")
    async with cb.run_test(size=SMALL):
        footer = screen_text(cb).splitlines()[-1].rstrip()
        assert "1 entailment 2 contradiction 3 neutral" in footer and "y yes" not in footer and "flip" not in footer
        assert footer.startswith("⏎ ok ") and footer.endswith("q quit") and len(footer) <= 80
        assert "/ filter" not in footer, "the keys the ? page lists give way to the labels"
    async with make_app(demo_db, task="superglue/cb").run_test(size=(140, 24)) as pilot:
        footer = screen_text(pilot.app).splitlines()[-1]
        assert "1 entailment 2 contradiction 3 neutral" in footer and "/ filter" in footer
    async with make_app(demo_db, task="superglue/copa").run_test(size=SMALL) as pilot:
        assert "1-2 label" in screen_text(pilot.app).splitlines()[-1], "labels that are the digits: one range"


async def test_help_shows_keys_as_typed(demo_db):
    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("question_mark")
        text = screen_text(app)
        assert "/               filter" in text and "?               help" in text and "j →" in text
        assert "slash" not in text and "question_mark" not in text


async def test_a_remapped_key_keeps_its_footer_entry_and_a_keymap_that_would_mislead_is_refused(demo_db, tmp_path):
    keymap = tmp_path / "keys.toml"
    keymap.write_text('[keymap]\n"annotate.next" = "m"\n')
    app = make_app(demo_db, keymap_file=keymap)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert "m next" in screen_text(app).splitlines()[-1]
        first = current_item_id(app)
        await pilot.press("m")
        assert current_item_id(app) != first
    for line, problem in (('"annotate.nxet" = "m"', "unknown binding id 'annotate.nxet'"),
                          ('"annotate.next" = "y"', "y would be both annotate.yes and annotate.next"),
                          ('"annotate.next" = "ctrl+zz"', "'ctrl+zz': no key is named 'zz'")):
        keymap.write_text(f"[keymap]\n{line}\n")
        with pytest.raises(UserFileError, match=re.escape(f"{keymap}: {problem}")):
            make_app(demo_db, keymap_file=keymap)


async def test_wic_highlights_the_word_in_both_sentences_and_hides_the_offsets(demo_db):
    app = make_app(demo_db, task="superglue/wic")
    async with app.run_test(size=SIZE):
        fields = app.screen.query_one("#item-fields").content
        text = screen_text(app)
        assert "start1" not in text and "end2" not in text
        marked = [fields.plain[s.start:s.end] for s in fields.spans if "reverse" in str(s.style)]
        assert marked == ["place", "place"]


async def test_filters_are_checked_and_always_shown(demo_db):
    app = make_app(demo_db, task="c3/pause", lang="zh")
    async with app.run_test(size=SIZE) as pilot:
        assert status(app).startswith(" task=c3/pause lang=zh ")
        await pilot.press("slash", *["backspace"] * 40, *"task=c3/lexcal", "enter")
        await pilot.pause()
        error = str(app.screen.query_one("#prompt-error").content)
        assert error == "unknown task 'c3/lexcal': did you mean c3/lexical?", "inline, in one short line"
        assert not app._notifications
        await pilot.press(*["backspace"] * 20, *"system=sdm-gamma", "enter")
        await pilot.pause()
        assert str(app.screen.query_one("#prompt-error").content) == "unknown system 'sdm-gamma'; here: sdm-alpha, sdm-beta"
        await pilot.press("x")
        assert str(app.screen.query_one("#prompt-error").content) == "", "editing clears it"
        await pilot.press("escape")
        assert status(app).startswith(" task=c3/pause lang=zh "), "the queue is unchanged"
        await pilot.press("slash", *["backspace"] * 40, "enter")
        await pilot.pause()
        assert status(app).startswith(" all items ")


async def test_quit_summary_counts_what_was_saved_across_filter_changes(demo_db):
    app = make_app(demo_db, task="c3/pause")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("y", "s")
        await pilot.press("slash", *["backspace"] * 60, *"task=c3/lexical system=sdm-alpha", "enter")
        await pilot.pause()
        await pilot.press("n")
        assert "labelled 1/1" in status(app)
    assert app.saved == {"label": 2, "skip": 1}


async def test_after_the_queue_is_finished_k_goes_back_and_flagged_items_can_be_revisited(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SIZE) as pilot:
        first = current_item_id(app)
        await pilot.press("f", "y")
        assert app.screen.view is None and "queue finished" in status(app) and "flagged 1" in status(app)
        await pilot.press("k")
        assert current_item_id(app) is not None
        await pilot.press("F")
        assert isinstance(app.screen, ItemPickerScreen) and f"#{first}" in screen_text(app)
        await pilot.press("enter")
        assert current_item_id(app) == first
        await pilot.press("y", "F")  # labelled now: it leaves the list, and the screen says where the flag stays
        said = " ".join(str(app.screen.query_one("Label").render()).split())  # wrapped in the dialog
        assert "No item you flagged in this queue waits for you" in said and "its flag stays in the export" in said


async def test_after_labelling_an_item_picked_with_F_the_app_goes_back_to_where_you_were(demo_db):
    app = make_app(demo_db)
    async with app.run_test(size=SIZE) as pilot:
        flagged = current_item_id(app)
        await pilot.press("f")
        skipped = current_item_id(app)
        await pilot.press("s")
        here = current_item_id(app)
        await pilot.press("F", "enter")
        assert current_item_id(app) == flagged
        await pilot.press("y")
        assert current_item_id(app) == here, "not the item skipped: it comes back after the rest of the queue"
        await pilot.press("y")
    assert rows(demo_db, "SELECT item_id, action FROM annotations ORDER BY id") == [
        (flagged, "flag"), (skipped, "skip"), (flagged, "label"), (here, "label")]


async def test_H_lists_labels_of_earlier_sessions_latest_first_and_one_can_be_labelled_again(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")  # two items
    async with app.run_test(size=SIZE) as pilot:
        first = current_item_id(app)
        await pilot.press("y")
        second = current_item_id(app)
        await pilot.press("n", "q")
    app = make_app(demo_db, task="c3/heterograph", lang="en")  # a later session: nothing left in its queue
    async with app.run_test(size=SIZE) as pilot:
        assert app.screen.view is None
        await pilot.press("H")
        assert isinstance(app.screen, ItemPickerScreen)
        text = screen_text(app)
        assert "Your labels in this queue, the latest first (2)" in text
        assert text.index(f"#{second} ") < text.index(f"#{first} "), "the latest first"
        assert re.search(rf"#{second} +NO +\d\d-\d\d \d\d:\d\d +c3/heterograph en ", text) and re.search(rf"#{first} +YES ", text)
        await pilot.press("down", "enter")  # the older one: the first item
        assert current_item_id(app) == first and "YES" in screen_text(app)
        await pilot.press("n")  # labelled again: the new label replaces this person's
        await pilot.press("H")
        text = screen_text(app)
        assert text.index(f"#{first} ") < text.index(f"#{second} ") and re.search(rf"#{first} +NO ", text)
        await pilot.press("H")
        assert not isinstance(app.screen, ItemPickerScreen), "H closes the list it opened"
    assert rows(demo_db, "SELECT item_id, label FROM labels_in_force ORDER BY item_id") == [(first, "no"), (second, "no")]
    assert app.saved == {"changed label": 1}, "the exit counts a label given again apart from new ones"


async def test_H_says_so_where_the_annotator_has_no_label_in_the_queue(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("H")
        assert "You have labelled no item in this queue yet. Esc closes" in screen_text(app)
        await pilot.press("escape")
        assert current_item_id(app) is not None


async def test_flagged_items_title_is_whole_at_80_columns(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("f", "F")
        text = " ".join(screen_text(app).replace("│", " ").split())
        assert "Your flagged items not labelled since (1): Enter shows one, Esc" in text, text
        assert re.search(r"Esc \S* ?closes", text), "the title wraps, whole"


async def test_score_form_title_is_whole_at_80_columns(demo_db):
    app = make_app(demo_db, task="rubric/reference")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("e")
        await pilot.pause()
        assert "Your scores, 0.0-100.0: Enter moves on, Enter on the last saves" in screen_text(app)


async def test_the_score_form_error_goes_once_the_scores_are_fixed_and_last_reads_as_scores(demo_db):
    app = make_app(demo_db, task="rubric/reference")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("e", "enter", *["backspace"] * 6, *"420", "enter")
        await pilot.pause()
        error = app.screen.query_one("#score-error")
        assert str(error.content) == "score_reasoning = 420.0 is outside 0.0-100.0"
        await pilot.press("backspace")
        await pilot.pause()
        assert str(error.content) == "", "42 is a score: the error goes"
        await pilot.press("enter")
        await pilot.pause()
        last = status(app).splitlines()[1]
        assert "label → answer 48.5 · reasoning 42.0" in last and "{" not in last


async def test_the_last_decision_gives_the_judge_a_line_of_its_own_where_both_do_not_fit(demo_db):
    app = make_app(demo_db, task="rubric/reference")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("enter")  # the judge's scores confirmed
        await pilot.pause()
        lines = screen_text(app).splitlines()
        assert lines[1].endswith(" confirm → answer 48.5 · reasoning 42.0")
        assert lines[2].strip() == "judge said answer 48.5 · reasoning 42.0 ✓ agrees", "not wrapped to column 0"
        await pilot.resize_terminal(140, 24)
        await pilot.pause()
        assert status(app).splitlines()[1].endswith("reasoning 42.0   judge said answer 48.5 · reasoning 42.0 ✓ agrees")


async def test_a_key_that_does_nothing_on_an_item_says_in_the_status_line_what_works_there(demo_db):
    async with make_app(demo_db, task="rubric/reference").run_test(size=SMALL) as pilot:
        await pilot.press("y")
        assert status(pilot.app).splitlines()[1] == " y does nothing here: label with the score form (e)"
        await pilot.press("l")
        assert status(pilot.app).splitlines()[1] == " l: this item has no audio"
        await pilot.press("p")  # a key that works on the item: the hint of the one that did not is done
        await pilot.pause()
        assert "no audio" not in status(pilot.app)
    async with make_app(demo_db, task="superglue/boolq").run_test(size=SMALL) as pilot:
        await pilot.press("1")
        assert "1 does nothing here: label with y True, n False" in screen_text(pilot.app)
        await pilot.press("c")
        assert "c: this item has no audio" in screen_text(pilot.app)
        await pilot.press("y")
        assert "does nothing" not in status(pilot.app) and "no audio" not in status(pilot.app), "gone with the item"
        await pilot.press("2")  # under the last decision's line: the bar grows a line for it
        await pilot.pause()
        assert screen_text(pilot.app).splitlines()[2] == " 2 does nothing here: label with y True, n False"
    async with make_app(demo_db, task="superglue/cb").run_test(size=SMALL) as pilot:
        await pilot.press("7")
        assert "7 does nothing here: label with 1 entailment, 2 contradiction, 3 neutral" in status(pilot.app)
    assert rows(demo_db) == [("label", "True")]


async def test_a_decimal_comma_in_the_score_form_is_a_decimal_point_never_dropped(demo_db):
    from textual import events
    from textual.keys import _character_to_key

    app = make_app(demo_db, task="rubric/reference")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("e", *["backspace"] * 6, *"50", "enter", *["backspace"] * 6, *"4,5", "enter")
        await pilot.pause()
        assert "label → answer 50.0 · reasoning 4.5" in status(app).splitlines()[1]
        await pilot.press("e", *["backspace"] * 6, *"45,5", "enter", *["backspace"] * 6, *"4,5,5", "enter")
        await pilot.pause()
        assert str(app.screen.query_one("#score-error").content) == "score_reasoning must be a number, not '4,5,5'"
        await pilot.press(*["backspace"] * 5)
        for char in "６２．５":  # a Chinese input method's full-width digits and point, as the terminal sends them
            app.post_message(events.Key(_character_to_key(char), char))
        await pilot.pause()
        await pilot.press("enter")
    assert [json.loads(label) for _, label in rows(demo_db)] == [
        {"score_answer": 50.0, "score_reasoning": 4.5}, {"score_answer": 45.5, "score_reasoning": 62.5}]


async def test_scores_typed_in_a_burst_go_to_the_fields_they_were_typed_for(demo_db):
    from textual import events

    app = make_app(demo_db, task="rubric/reference")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("e")
        await pilot.pause()
        # a fast typist: every key reaches the app before the first is handled
        for key in ["backspace"] * 4 + ["9", "0", "enter"] + ["backspace"] * 4 + ["8", "0", "enter"]:
            app.post_message(events.Key(key, key if len(key) == 1 else None))
        await pilot.pause(0.5)
    assert rows(demo_db, "SELECT action, label FROM annotations") == [
        ("label", '{"score_answer": 90.0, "score_reasoning": 80.0}')]


async def test_the_header_is_one_line_at_80_columns(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("slash", *["backspace"] * 60, "enter")  # all items: task, language and source id shown
        await pilot.pause()
        first = status(app).splitlines()[0]
        assert first.startswith(" all items  c3/") and first.endswith("labelled 0/62") and len(first) <= 80
        assert "…" in first and "tester" not in first, "the annotator's name, then the source id give way"
        await pilot.resize_terminal(140, 24)
        await pilot.pause()
        assert "(ambiguity/phonological/generation/0)  tester labelled 0/62" in status(app).splitlines()[0], \
            "whole where they fit"
        await pilot.resize_terminal(80, 24)
        await pilot.press("y", "k")  # labelled, then back to it: the header says what you gave
        await pilot.pause()
        first = status(app).splitlines()[0]
        assert first.rstrip().endswith("yours: yes") and len(first) <= 80, "your label keeps its place; the source gives way"
    async with make_app(demo_db, task="rubric/reference").run_test(size=SMALL) as pilot:
        await pilot.press("e", "enter", "enter", "k")  # the judge's scores accepted, then back to the item
        await pilot.pause()
        first = status(pilot.app).splitlines()[0]
        assert first.endswith("labelled 1/2  yours: answer 48.5 · reasoning 42.0") and len(first) <= 80, first
        assert first.startswith(" task=rubric/"), "the filter gives way, cut at its end"


async def test_the_verdict_panel_breaks_the_template_id_between_its_parts_at_any_width(demo_db):
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SMALL) as pilot:
        for width in (80, 70, 140):
            await pilot.resize_terminal(width, 24)
            await pilot.pause()
            panel = [line.split("│")[-2].strip() for line in screen_text(app).splitlines() if line.count("│") == 4]
            start = next(n for n, line in enumerate(panel) if "template" in line)
            ends = [n for n, line in enumerate(panel) if line.endswith("heterograph")]
            assert ends, f"the id broken within a word: {panel}"
            end = ends[0]
            assert " ".join(panel[start:end + 1]).replace("/ ", "/").replace("- ", "-") == \
                "template c3-official/en/heterograph", panel
            assert all(line == "template" or line[-1] in "/-_" for line in panel[start:end]), panel
        assert end == start, "whole where it fits"


async def waiting_shown(app, pilot, seconds: float = 10) -> str:
    """The screen once its status line says that a write has waited a second or more."""
    deadline = time.monotonic() + seconds
    while not re.search(r"waiting [1-9]\d* s", status(app)):
        assert time.monotonic() < deadline, f"the app never said it waits: {status(app)!r}"
        await pilot.pause(0.05)
    await pilot.pause()  # and every redraw that follows (the line changes the bar's height)
    return screen_text(app)


async def test_the_app_waits_for_a_writer_holding_the_lock_says_so_and_keeps_the_decision(demo_db):
    """The decision waits on a worker thread, and is written on the app's own: the worker never
    uses the app's connection, which the screen goes on reading meanwhile (SQLite reports a
    statement's error through its connection: a read in between once turned the busy lock into
    "another row available", and the decision was lost)."""
    import sqlite3
    import threading

    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        with threads_using(app.session.store) as used_by:
            first = current_item_id(app)
            other = sqlite3.connect(demo_db, isolation_level=None)
            other.execute("BEGIN IMMEDIATE")  # a long import, say: it holds the write lock
            other.execute("INSERT INTO leases (item_id, annotator, expires_at) VALUES (?, 'importer', 0)", (first,))
            try:
                await pilot.press("n")  # the first decision of the app
                shown = " ".join((await waiting_shown(app, pilot)).split())
                assert "waiting" in shown and "for another writer: your decision is not saved yet" in shown, shown
                assert current_item_id(app) == first, "the decision is not confirmed before it is committed"
                await pilot.press("j", "y", "u")  # keys wait meanwhile, each saying so; nothing else is recorded
                assert told(app).count("still waiting to save the previous action") == 3, told(app)
            finally:
                other.execute("COMMIT")
            await app.workers.wait_for_complete()
            await pilot.pause()
            assert current_item_id(app) != first and "last: #" in status(app) and "for another writer" not in screen_text(app)
            other.close()
            assert used_by == {threading.get_ident()}, "the app's connection was used on the app's thread only"
    assert rows(demo_db) == [("label", "no")], "the decision made while the lock was held is kept, once"


async def test_quitting_and_a_new_filter_wait_for_a_writer_holding_the_lock_and_say_so(demo_db):
    """q and a filter change give the held items back first: under another writer's lock the app
    says what waits instead of freezing; a second q quits at once, and the summary says the
    items stay held."""
    import sqlite3

    other = sqlite3.connect(demo_db, isolation_level=None)
    app = make_app(demo_db, task="c3/lexical")
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        other.execute("BEGIN IMMEDIATE")
        try:
            await pilot.press("slash", *"task=c3/multi-turn lang=zh", "enter")
            assert "for another writer: the new filter starts when it is free" in " ".join(
                (await waiting_shown(app, pilot)).split())
            assert app.screen.view.item.task == "c3/lexical", "the queue is not changed before the items are given back"
        finally:
            other.execute("COMMIT")
        deadline = time.monotonic() + 10  # (the old queue's screen, and its worker, are gone then)
        while getattr(app.screen, "view", None) is None or app.screen.view.item.task == "c3/lexical":
            assert time.monotonic() < deadline, "the new filter never started"
            await pilot.pause(0.05)
        assert (app.screen.view.item.task, app.screen.view.item.lang) == ("c3/multi-turn", "zh")
        assert rows(demo_db, "SELECT count(*) FROM leases WHERE item_id IN (SELECT id FROM items "
                             "WHERE task = 'c3/lexical')") == [(0,)], "the old queue's item is given back"
        other.execute("BEGIN IMMEDIATE")  # held until the app has ended
        await pilot.press("q")
        assert "for another writer: calibrate quits when it is free; q quits now" in " ".join(
            (await waiting_shown(app, pilot)).split())
        assert app.is_running
        await pilot.press("q")  # not "still waiting": it quits at once
    other.execute("COMMIT")
    held = [(app.session.holder,)]
    assert app.held_back and rows(demo_db, "SELECT annotator FROM leases") == held, "held until a start or the lease's end"
    quitting = make_app(demo_db, task="c3/lexical")
    async with quitting.run_test(size=SMALL) as pilot:
        other.execute("BEGIN IMMEDIATE")
        try:
            await pilot.press("q")
            await waiting_shown(quitting, pilot)
        finally:
            other.execute("COMMIT")
        deadline = time.monotonic() + 10
        while quitting.is_running and time.monotonic() < deadline:  # it quits once the items are given back
            await pilot.pause(0.05)
        assert not quitting.is_running
    other.close()
    assert not quitting.held_back and rows(demo_db, "SELECT annotator FROM leases") == [], "given back as it quit"


async def test_q_while_a_decision_waits_for_another_writer_quits_once_it_is_saved(demo_db):
    """q while the decision waits: it is saved, then the app gives the held items back and
    quits; q pressed twice quits at once, and the exit says the decision was not saved."""
    import sqlite3

    other = sqlite3.connect(demo_db, isolation_level=None)
    app = make_app(demo_db, task="c3/heterograph", lang="en")
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        other.execute("BEGIN IMMEDIATE")
        try:
            await pilot.press("n")
            await waiting_shown(app, pilot)
            await pilot.press("q")
            await pilot.pause()
            assert "your decision is not saved yet; calibrate quits once it is done (q again: at once)" in " ".join(
                screen_text(app).split())
            assert app.is_running and "still waiting to save the previous action" not in told(app)
        finally:
            other.execute("COMMIT")
        deadline = time.monotonic() + 10
        while app.is_running and time.monotonic() < deadline:
            await pilot.pause(0.05)
        assert not app.is_running
    assert rows(demo_db) == [("label", "no")] and rows(demo_db, "SELECT * FROM leases") == []
    assert app.lost is None and app.saved["label"] == 1
    twice = make_app(demo_db, task="c3/heterograph", lang="en")
    async with twice.run_test(size=SMALL) as pilot:
        other.execute("BEGIN IMMEDIATE")
        await pilot.press("y")
        await waiting_shown(twice, pilot)
        await pilot.press("q", "q")
        await pilot.pause()
        assert not twice.is_running
    other.execute("COMMIT")
    other.close()
    assert twice.lost == "your last decision was not saved" and rows(demo_db) == [("label", "no")]


async def test_a_decision_saved_before_the_next_item_waits_is_not_made_again(demo_db):
    """Another writer takes the lock between the decision's commit and the claim of the next
    item: the claim waits, the decision is not recorded twice, and the line says it is saved."""
    import sqlite3

    app = make_app(demo_db, task="c3/pause")
    other = sqlite3.connect(demo_db, isolation_level=None)
    async with app.run_test(size=SMALL) as pilot:
        store, first = app.session.store, current_item_id(app)
        annotate = store.annotate

        def then_locked(*args, **kwargs):
            row = annotate(*args, **kwargs)
            if not other.in_transaction:
                other.execute("BEGIN IMMEDIATE")
            return row

        store.annotate = then_locked
        try:
            await pilot.press("n")
            assert "for another writer: saved; the next item comes when it is free" in " ".join(
                (await waiting_shown(app, pilot)).split())
        finally:
            other.execute("COMMIT")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert current_item_id(app) != first and "last: #" in status(app)
    other.close()
    assert rows(demo_db) == [("label", "no")]


async def test_a_bad_item_is_shown_and_can_be_skipped(tmp_path):
    db = tmp_path / "bad.db"
    store = Store(db)
    ids, _ = store.add_items([
        NewItem("no/such-task", "en", "x", {"content": "c"}),
        NewItem("c3/multi-turn", "en", "y", {"turns": ["hi"], "response": 5}),
        NewItem("c3/lexical", "en", "z", {"content": "fine", "notation": "n", "response": "r"}),
    ], with_ids=True)
    store.close()
    app = make_app(db)
    async with app.run_test(size=SIZE) as pilot:
        assert current_item_id(app) == ids[0]
        assert "cannot be labelled" in screen_text(app) and "unknown task 'no/such-task'" in screen_text(app)
        await pilot.press("y")
        assert current_item_id(app) == ids[0], "it cannot be labelled"
        await pilot.press("s")
        assert current_item_id(app) == ids[1]
        assert "cannot be labelled" in screen_text(app)
        assert app.screen.view.problem == "field 'response' must be list of text, got number"
        await pilot.press("s")
        assert current_item_id(app) == ids[2]
    assert rows(db) == [("skip", None), ("skip", None)]
    assert rows(db, "SELECT count(*) FROM leases") == [(0,)], "the skipped items' leases are released"


async def test_checkpoints_share_one_connection_closed_with_the_screen(demo_db, monkeypatch):
    """Every CHECKPOINT_EVERY decisions the write-ahead log is copied into the file on the
    checkpoint thread's connection: opened once for all of them, closed when the screen is."""
    from calibrate.tui import annotate_screen

    opened = []

    class CountedStore(Store):
        def __init__(self, *args, **kw):
            super().__init__(*args, **kw)
            opened.append(self)

        def checkpoint(self):
            self.checkpoints = getattr(self, "checkpoints", 0) + 1
            super().checkpoint()

    monkeypatch.setattr(annotate_screen, "CHECKPOINT_EVERY", 2)
    monkeypatch.setattr(annotate_screen, "Store", CountedStore)
    app = make_app(demo_db, order="random", seed=3)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(6):
            await pilot.press("s")
            await app.workers.wait_for_complete()
    assert len(opened) == 1 and opened[0].checkpoints == 3
    with pytest.raises(Exception, match="closed"):
        opened[0].conn.execute("SELECT 1")


async def test_a_damaged_database_met_by_a_read_ends_the_app_with_its_message_not_a_traceback(demo_db):
    from calibrate.store import DatabaseFault

    app = make_app(demo_db)
    damage = DatabaseFault(f"{demo_db}: the database file is damaged (truncated or corrupt)", 11)

    def back():
        raise damage

    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("j")  # (k on the first item does nothing)
        app.session.back = back
        app.simulate_key("k")  # going back reads the item before: the damaged page (the app ends: nothing to wait for)
        for _ in range(200):  # bounded: 2 s at most
            if app.fault is not None:
                break
            await asyncio.sleep(0.01)
    assert app.fault is damage and app.return_code == 1, "annotate then says the fault's message and exits 1"


def annotating(monkeypatch, *keys: str) -> list[str]:
    """`calibrate annotate` runs its app as in a terminal, driven headless: Pilot presses `keys`,
    then q; the list gets what the screen showed before q."""
    import calibrate.cli
    from calibrate.tui import CalibrateApp

    shown = []

    async def pressing(app):
        async with app.run_test(size=SMALL) as pilot:
            await pilot.press(*keys)
            await pilot.pause()
            shown.append(screen_text(app))
            await pilot.press("q")

    monkeypatch.setattr(calibrate.cli, "in_terminal", lambda: True)
    monkeypatch.setattr(CalibrateApp, "run", lambda app: asyncio.run(pressing(app)))
    return shown


def test_the_exit_summary_counts_notes_and_flags_not_only_labels(demo_db, monkeypatch):
    annotating(monkeypatch, "a", *"same as #3", "enter")
    out = Calibrate(demo_db)("annotate", "--annotator", "carol", "--task", "c3/pause")
    assert "carol: 1 note saved in " in " ".join(out.output.split())
    annotating(monkeypatch, "a", *"tricky", "enter", "f", "y", "u")
    out = Calibrate(demo_db)("annotate", "--annotator", "carol", "--task", "c3/pause")
    assert "carol: 1 label, 1 flag, 1 undo, 1 note saved in " in " ".join(out.output.split())


def test_an_order_that_finds_none_of_the_items_it_puts_first_says_so_on_screen_and_on_exit(demo_db, monkeypatch):
    said = "unstable-first: no verdict changed over judge --repeat: items in id order"
    shown = annotating(monkeypatch, "y")  # no judge --repeat in the demo
    out = Calibrate(demo_db)("annotate", "--annotator", "ord", "--order", "unstable-first")
    assert said in shown[0]
    assert out.exit_code == 0 and f"--order {said}." in " ".join(out.stderr.split())
    shown = annotating(monkeypatch, "y")  # the demo has unparsed verdicts: contested
    out = Calibrate(demo_db)("annotate", "--annotator", "ord", "--order", "disagreement-first")
    assert "id order" not in shown[0] + out.output
