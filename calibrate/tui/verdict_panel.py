"""The judge's verdict, large and coloured, with the raw judge output beneath it. In blind
mode the verdict stays hidden until the annotator has labelled the item. The judge's name and
template id break at their '/', '-' and '_' to fit the panel's width (wrapping at spaces would
cut them mid-word), so the panel is drawn again when its width changes."""

from __future__ import annotations

from rich.text import Text
from textual.containers import Vertical

from calibrate.display import PAGE_CHARS
from calibrate.escape import safe
from calibrate.fit import broken_name
from calibrate.item_view import ItemView
from calibrate.kinds import BADGE_TEXT, STATUS_BADGES
from calibrate.tui.reading_pane import ReadingPane
from calibrate.tui.text_view import TextView


class VerdictPanel(Vertical):
    DEFAULT_CSS = """
    VerdictPanel #verdict-big { height: 5; content-align: center middle; text-style: bold; }
    VerdictPanel #verdict-raw-scroll { height: 1fr; }
    """

    def compose(self):
        yield TextView(id="verdict-big")
        yield TextView(id="verdict-meta")
        with ReadingPane(id="verdict-raw-scroll"):
            yield TextView(id="verdict-raw")

    _shown: tuple[ItemView | None, bool] = (None, False)

    def on_resize(self) -> None:
        self.show(*self._shown)

    def show(self, view: ItemView | None, hidden: bool) -> None:
        self._shown = (view, hidden)
        big, meta, raw = (self.query_one(f"#verdict-{n}", TextView) for n in ("big", "meta", "raw"))
        if view is None or view.judgment is None or hidden:
            big.styles.background = None  # set only where it changes: each change repaints the badge
        if view is None:
            for widget in (big, meta, raw):
                widget.show_text("")
            return
        judgment = view.judgment
        if judgment is None:
            big.show_text(Text("no judgment", style="dim"))
            means = view.kind.label_means("the response")
            meta.show_text(Text("no judge has looked at this item: label it yourself" + (f"\n{means}" if means else ""),
                                style="dim"))
            raw.show_text("")
            return
        if hidden:
            big.show_text(Text("verdict hidden", style="bold magenta"))
            meta.show_text(Text(f"{safe(judgment.judge_name)} · blind mode: label first, then see the judge", style="dim"))
            raw.show_text("")
            return
        if judgment.status == "verdict":
            words, text_colour, background = view.kind.words(judgment.verdict), BADGE_TEXT, view.kind.colour(judgment.verdict)
        else:
            words = "UNPARSED" if judgment.status == "unparsed" else "JUDGE ERROR"
            text_colour, background = STATUS_BADGES[judgment.status]
        big.styles.background = background
        big.show_text(Text(f"  {safe(words)}  ", style=f"bold {text_colour} on {background}"))
        width = self.content_size.width or 10_000  # before the first layout: wrapped again on resize
        details = [broken_name(safe(judgment.judge_name), width)]
        if judgment.correct is not None:
            details.append("matches gold" if judgment.correct else "differs from gold")
        if judgment.confidence is not None:
            details.append(f"P={judgment.confidence:.2f}")
        info = Text(" · ".join(details), style="dim")
        info.append(f"\ntemplate {broken_name(safe(judgment.template_id or '?'), width, len('template '))}", style="dim")
        if (means := view.kind.label_means("the output below")) and judgment.status == "verdict":
            info.append(f"\n{means}", style="dim")
        if view.repeats:
            said = [view.kind.words(v) if status == "verdict" else status for status, v in view.repeats]
            info.append(f"\n{len(said)} repeats: {safe(' · '.join(said))} (the verdict is their majority)", style="dim")
        if judgment.unparsed_reason:
            info.append(f"\nwhy unparsed: {safe(judgment.unparsed_reason)}", style="yellow")
        if judgment.error:
            info.append(f"\nerror: {safe(judgment.error)}", style="red")
        meta.show_text(info)
        output = judgment.raw_output or "(no output)"
        shown = Text(safe(output[:PAGE_CHARS]))
        if len(output) > PAGE_CHARS:
            shown.append("\n… the output goes on (it is stored whole)", style="bold magenta")
        raw.show_text(shown)
