"""The one page shell and stylesheet of every HTML output (`report --format html`, `scores
--format html`): a self-contained document (no script, no outside file) that renders Chinese
as well as English, whatever fonts the reader's machine has. On a phone-wide screen the
report's overview leaves out its κ plot and lets its numbers wrap, so each line's cell, n, κ and
ceiling show without scrolling sideways.
"""

from __future__ import annotations

import html

FONTS = ('system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "Noto Sans CJK SC", "Noto Sans SC", '
         '"Source Han Sans SC", "PingFang SC", "Hiragino Sans GB", "Microsoft YaHei", "WenQuanYi Micro Hei", sans-serif')
STYLE = f"""
body{{font-family:{FONTS};margin:24px auto;max-width:1200px;padding:0 16px;color:#1b1b1b;line-height:1.4}}
h1{{font-size:22px}} h2{{font-size:16px;margin:28px 0 6px}} .muted{{color:#555;font-size:13px}}
li{{font-size:13px;margin:2px 0}}
table.forest{{border-collapse:collapse;width:100%;min-width:56em;table-layout:fixed}}
table.forest th,table.forest td{{border-bottom:1px solid #e3e3e3;padding:4px 6px;font-size:13px;text-align:left;
  vertical-align:middle;overflow-wrap:anywhere}}
table.forest th{{overflow-wrap:normal;word-break:keep-all}}
table.forest td.num{{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}}
table.cm{{border-collapse:collapse;font-size:12px;margin:6px 12px 6px 0;display:inline-table}}
table.cm td,table.cm th{{border:1px solid #ccc;padding:2px 6px;text-align:right}}
div.wide{{overflow-x:auto}}
table.scores{{border-collapse:collapse}}
table.scores td,table.scores th{{border-bottom:1px solid #e3e3e3;padding:4px 6px;font-size:13px;text-align:left;
  vertical-align:top;white-space:nowrap}}
table.scores td:last-child{{white-space:normal;min-width:28em}} table.scores th{{background:#f4f4f4;white-space:normal}}
span.whole{{white-space:nowrap}}
caption{{font-size:11px;color:#555;text-align:left}} details{{margin:4px 0 10px}} summary{{cursor:pointer;color:#0b5394}}
ul.notes{{margin:4px 0 0 18px;padding:0;font-size:13px;color:#333}}
.key span{{display:inline-block;margin-right:14px}}
.reliability{{display:flex;flex-wrap:wrap;align-items:flex-start;gap:16px;margin:8px 0}}
.reliability figure{{margin:0;max-width:260px}} .reliability figcaption{{font-size:11px}}
.reliability table.cm{{flex:1 1 480px;max-width:820px}}
@media (max-width:640px){{table.forest{{min-width:0;table-layout:auto}} table.forest col{{width:auto!important}}
  table.forest th:nth-child(4),table.forest td:nth-child(4){{display:none}}
  table.forest td{{overflow-wrap:normal}} table.forest td.num{{white-space:normal}}}}
"""


def page(title: str, body: str) -> str:
    """A whole HTML document: `title` (plain text) as the window title and the first heading,
    then `body` (HTML, already escaped), with the shared stylesheet."""
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>calibrate: {html.escape(title)}</title><style>{STYLE}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )
