"""The judge's verdict, large and coloured, with the raw judge output beneath it. In blind
mode the verdict stays hidden until the annotator has labelled the item."""

from __future__ import annotations

from rich.text import Text
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Static

from calibrate.display import safe
from calibrate.session import ItemView


class VerdictPanel(Vertical):
    DEFAULT_CSS = """
    VerdictPanel #verdict-big { height: 5; content-align: center middle; text-style: bold; }
    VerdictPanel #verdict-raw-scroll { height: 1fr; }
    """

    def compose(self):
        yield Static(id="verdict-big", markup=False)
        yield Static(id="verdict-meta", markup=False)
        with VerticalScroll(id="verdict-raw-scroll"):
            yield Static(id="verdict-raw", markup=False)

    def show(self, view: ItemView | None, hidden: bool) -> None:
        big, meta, raw = (self.query_one(f"#verdict-{n}", Static) for n in ("big", "meta", "raw"))
        big.styles.background = None
        if view is None:
            for widget in (big, meta, raw):
                widget.update("")
            return
        judgment = view.judgment
        if judgment is None:
            big.update(Text("no judgment", style="dim"))
            meta.update(Text("no judge has looked at this item: label it yourself", style="dim"))
            raw.update("")
            return
        if hidden:
            big.update(Text("verdict hidden", style="bold magenta"))
            meta.update(Text(f"{safe(judgment.judge_name)} · blind mode: label first, then see the judge", style="dim"))
            raw.update("")
            return
        if judgment.status == "verdict":
            words = view.kind.words(judgment.verdict)
            colour = view.kind.colour(judgment.verdict)
            big.styles.background = f"{colour} 30%"
            big.update(Text(f"  {safe(words)}  ", style=f"bold {colour}"))
        elif judgment.status == "unparsed":
            big.styles.background = "yellow 25%"
            big.update(Text("UNPARSED", style="bold yellow"))
        else:
            big.styles.background = "red 20%"
            big.update(Text("JUDGE ERROR", style="bold red"))
        details = [safe(judgment.judge_name), f"template {safe(judgment.template_id or '?')}"]
        if judgment.correct is not None:
            details.append("matches gold" if judgment.correct else "differs from gold")
        if judgment.confidence is not None:
            details.append(f"P={judgment.confidence:.2f}")
        info = Text(" · ".join(details), style="dim")
        if judgment.unparsed_reason:
            info.append(f"\nwhy unparsed: {safe(judgment.unparsed_reason)}", style="yellow")
        if judgment.error:
            info.append(f"\nerror: {safe(judgment.error)}", style="red")
        meta.update(info)
        raw.update(Text(safe(judgment.raw_output or "(no output)")))
