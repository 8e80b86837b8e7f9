"""An annotator's working session, without any user interface: which item comes next (queue
order, leases, overlap), what the judge said about it, and recording each decision at once.

The Textual app is a thin view over this, so every key path can also be driven and tested
directly, and decisions are committed to SQLite before the next item is shown.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field

from calibrate.kinds import LabelError, VerdictKind
from calibrate.model import LABEL_ACTIONS, Item, Judgment, lease_holder
from calibrate.store import DEFAULT_LEASE_SECONDS, Store
from calibrate.templates import RenderedPrompt, Template, TemplateError, TemplateSet
from calibrate.validate import InputError, check_field_type

ORDERS = ("in-order", "random", "stratified", "disagreement-first")


class SessionError(ValueError):
    """A decision that cannot be made (no verdict to confirm, a label outside the set...)."""


@dataclass
class ItemView:
    """What the annotation screen shows for one item."""

    item: Item
    template: Template
    judgment: Judgment | None
    choices: tuple[str, ...]
    current_label: str | None
    notes: list[str]
    problem: str | None = None  # why this item cannot be labelled (no template, fields of the wrong type)

    @property
    def kind(self) -> VerdictKind:
        return self.template.kind

    @property
    def is_scores(self) -> bool:
        return self.kind.scored

    @property
    def is_binary(self) -> bool:
        return self.kind.is_binary

    @property
    def is_yes_no(self) -> bool:
        """A task whose two labels read as yes / no, so y and n make sense."""
        return self.kind.reads_yes_no

    @property
    def verdict(self) -> str | None:
        return self.judgment.verdict if self.judgment and self.judgment.status == "verdict" else None

    def prompt(self) -> RenderedPrompt | None:
        """The prompt the judge saw: the stored one, else rendered from the template now."""
        if self.judgment and self.judgment.prompt:
            return RenderedPrompt(self.template, self.judgment.system_prompt, self.judgment.prompt)
        if not self.template.has_prompt:
            return None
        try:
            return self.template.render(self.item.task, self.item.fields)
        except TemplateError:
            return None


@dataclass
class Decision:
    item_id: int
    action: str
    label: str | None
    judge_verdict: str | None
    uid: str = ""  # of the annotation row that recorded it

    @property
    def agrees(self) -> bool | None:
        if self.label is None or self.judge_verdict is None:
            return None
        return self.label == self.judge_verdict


@dataclass
class Progress:
    decided: int
    total: int
    per_hour: float | None


@dataclass
class AnnotationSession:
    store: Store
    templates: TemplateSet
    annotator: str
    task: str | None = None
    lang: str | None = None
    judge: str | None = None
    blind: bool = False
    order: str = "in-order"
    overlap: int = 1
    seed: int = 0
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    tab: str | None = None  # one browser tab of `calibrate serve`: its own leases, and undo only its own decisions
    history: list[int] = field(default_factory=list)
    position: int = -1
    last_decision: Decision | None = None

    def __post_init__(self) -> None:
        if self.order not in ORDERS:
            raise SessionError(f"unknown order {self.order!r}: use {', '.join(ORDERS)}")
        self.started = time.monotonic()
        self.decisions_here = 0
        self._newly_decided: set[int] = set()
        self._queue: list[int] | None = None
        self._queue_cursor = 0
        self._claim_after = 0
        self._shown_at = time.monotonic()
        self._decided_uids: list[str] = []  # this session's decisions (a tab undoes only these)
        self.holder = lease_holder(self.annotator, self.tab)
        self.total = self.store.count_items(task=self.task, lang=self.lang)
        self.decided_before = self.store.count_decided(self.annotator, task=self.task, lang=self.lang)

    # -- queue -------------------------------------------------------------------------------

    def _ordered_queue(self) -> list[int]:
        import numpy as np  # only the shuffled orders need it; keeps start-up light

        rng = np.random.default_rng(self.seed)
        if self.order == "stratified":
            cells: dict[tuple[str, str], list[int]] = {}
            for item_id, cell in self.store.item_cells(task=self.task, lang=self.lang).items():
                cells.setdefault(cell, []).append(item_id)
            lanes = [list(rng.permutation(sorted(members))) for _, members in sorted(cells.items())]
            return [int(lane[k]) for k in range(max(map(len, lanes), default=0)) for lane in lanes if k < len(lane)]
        ids = self.store.item_ids(task=self.task, lang=self.lang)
        if self.order == "random":
            return [int(i) for i in rng.permutation(ids)]
        first = self.store.contested_item_ids(task=self.task, lang=self.lang, judge=self.judge)  # disagreement-first
        chosen = set(first)
        return first + [i for i in ids if i not in chosen]

    def _claim(self) -> int | None:
        if self.order == "in-order":
            item_id = self.store.claim_next(
                self.annotator, overlap=self.overlap, task=self.task, lang=self.lang,
                after_id=self._claim_after, lease_seconds=self.lease_seconds, holder=self.holder,
            )
            if item_id is not None:
                self._claim_after = item_id
            return item_id
        if self._queue is None:
            self._queue = self._ordered_queue()
        while self._queue_cursor < len(self._queue):
            window = self._queue[self._queue_cursor : self._queue_cursor + 512]
            item_id = self.store.claim_first(self.annotator, window, overlap=self.overlap, lease_seconds=self.lease_seconds,
                                             holder=self.holder)
            if item_id is not None:
                self._queue_cursor += window.index(item_id) + 1
                return item_id
            self._queue_cursor += len(window)
        return None

    # -- navigation --------------------------------------------------------------------------

    def current(self) -> ItemView | None:
        if 0 <= self.position < len(self.history):
            return self.view(self.history[self.position])
        return None

    def start(self) -> ItemView | None:
        """The first item of the queue (claimed, or kept if this annotator already holds it)."""
        return self.forward()

    def forward(self) -> ItemView | None:
        """The next item in this session's history, or a newly claimed one."""
        if self.position + 1 < len(self.history):
            self.position += 1
        else:
            item_id = self._claim()
            if item_id is None:
                self.position = len(self.history)
                return None
            self.history.append(item_id)
            self.position = len(self.history) - 1
        self._shown_at = time.monotonic()
        return self.current()

    def back(self) -> ItemView | None:
        if self.position > 0:
            self.position -= 1
            self._shown_at = time.monotonic()
        return self.current()

    def jump_to(self, item_id: int) -> ItemView:
        if item_id in self.history:
            self.position = self.history.index(item_id)
        else:
            self.history.insert(self.position + 1 if self.position >= 0 else 0, item_id)
            self.position = self.history.index(item_id)
        self._shown_at = time.monotonic()
        return self.view(item_id)

    def view(self, item_id: int) -> ItemView:
        item = self.store.item(item_id)
        template, problem = self._template_for(item)
        judgments = self.store.judgments_for_item(item_id, self.judge)
        judgment = next((j for j in judgments if j.status != "error"), judgments[0] if judgments else None)
        choices = template.kind.labels
        return ItemView(item, template, judgment, choices, self.store.current_label(item_id, self.annotator),
                        self.store.note_texts(item_id), problem)

    def _template_for(self, item: Item) -> tuple[Template, str | None]:
        """The item's template, or a stand-in without labels and the reason the item cannot be
        labelled: a bad item is shown and skipped, it never stops the session."""
        try:
            template = self.templates.for_task(item.task, item.lang)
            for name, declared in template.field_types.items():
                if name in item.fields:
                    check_field_type(name, item.fields[name], declared)
            return template, None
        except (TemplateError, InputError) as exc:
            stand_in = Template(id="(none)", family="", lang=item.lang, tasks=(item.task,), required=(), verdict="label_set")
            return stand_in, str(exc)

    # -- decisions ---------------------------------------------------------------------------

    def decide(self, action: str, label: str | None = None) -> Decision:
        """Record a decision on the current item (committed before this returns)."""
        view = self.current()
        if view is None:
            raise SessionError("no item to decide on")
        if view.problem and action not in ("skip", "flag"):
            raise SessionError(f"this item cannot be labelled ({view.problem}): s skips it, f flags it")
        if action == "confirm":
            if self.blind:
                raise SessionError("blind mode: give your own label (y/n, digits or the score form)")
            if view.verdict is None:
                raise SessionError("the judge gave no verdict to confirm: label it yourself")
            label = view.verdict
        elif action == "override":
            if self.blind:
                raise SessionError("blind mode: give your own label")
            if not view.is_binary:
                raise SessionError("override flips a yes/no verdict; for this task press a digit")
            if view.verdict is None:
                raise SessionError("the judge gave no verdict to override: label it yourself")
            label = view.kind.flip(view.verdict)
        elif action == "label":
            label = self._check_label(view, label)
        elif action not in ("skip", "flag"):
            raise SessionError(f"unknown action {action!r}")
        shown = view.judgment.id if view.judgment and not self.blind else None
        first_time = not self.store.has_decision(view.item.id, self.annotator)
        uid = uuid.uuid4().hex
        self.store.annotate(
            view.item.id, self.annotator, action, label=label if action in LABEL_ACTIONS else None,
            judgment_id=shown, blind=self.blind, seconds_spent=round(time.monotonic() - self._shown_at, 3),
            uid=uid, holder=self.holder,
        )
        self._decided_uids.append(uid)
        if first_time:
            self._newly_decided.add(view.item.id)
        self.decisions_here += 1
        self.last_decision = Decision(view.item.id, action, label, view.verdict, uid)
        return self.last_decision

    def _check_label(self, view: ItemView, label: str | None) -> str:
        if not view.is_scores and label not in view.choices:
            raise SessionError(f"{label!r} is not a label of {view.item.task}: {', '.join(view.choices)}")
        try:
            return view.kind.normalize_label(label)
        except LabelError as exc:
            raise SessionError(str(exc)) from None

    def note(self, text: str) -> None:
        view = self.current()
        if view is None or not text.strip():
            return
        self.store.annotate(view.item.id, self.annotator, "note", note=text.strip(), blind=self.blind)

    def undo(self) -> ItemView | None:
        """Reverse the latest decision (an appended row) and show that item again."""
        undone = self.store.undo_last(self.annotator, among=self._decided_uids if self.tab else None)
        if undone is None:
            return None
        if not self.store.has_decision(undone.item_id, self.annotator):
            self._newly_decided.discard(undone.item_id)
        self.last_decision = None
        return self.jump_to(undone.item_id)

    def progress(self) -> Progress:
        elapsed = time.monotonic() - self.started
        # a pace from one or two decisions is noise: show it from the third on
        per_hour = self.decisions_here / elapsed * 3600 if self.decisions_here >= 3 and elapsed > 0 else None
        return Progress(min(self.total, self.decided_before + len(self._newly_decided)), self.total, per_hour)

    def close(self) -> None:
        """Give back this annotator's held items so others can take them."""
        self.store.release_all(self.holder)
