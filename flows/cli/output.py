"""How the CLI prints rows: a table for people, CSV or JSON for scripts (docs/cli.md).

`--format` defaults to `table` on a terminal and `csv` when the output is piped or
redirected. Tables show the short columns a command names, so they stay readable at
80 columns; CSV and JSON carry every column at full length on stdout, and the title
goes to stderr. Nothing data-derived is
ever read as rich markup: cells are Text objects and messages go through `escape`.
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import datetime
from enum import Enum

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

console = Console(soft_wrap=True)  # messages never gain line breaks inside a path
err = Console(stderr=True, soft_wrap=True)


LONGEST_WORD = 24  # a table cell's word longer than this may be folded (a path, a hash)


class Format(str, Enum):
    table = "table"
    csv = "csv"
    json = "json"


def resolve_format(fmt: Format | None) -> Format:
    if fmt is not None:
        return fmt
    return Format.table if sys.stdout.isatty() else Format.csv


def plain(value):
    if isinstance(value, datetime):
        return value.isoformat(timespec="seconds")
    return value


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M")
    if isinstance(value, dict):
        return " ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value))
    return str(value)


def emit(
    rows: list[dict],
    fmt: Format | None,
    title: str | None = None,
    table_columns: dict | None = None,
    max_rows: int | None = None,
) -> None:
    """Print `rows`. `table_columns` maps a table header to a function of the row (the
    short form of a column); by default every column is shown as it is."""
    fmt = resolve_format(fmt)
    shown = rows[:max_rows] if max_rows is not None else rows
    if title and fmt is not Format.table:
        err.print(escape(title))  # for the person at the terminal; stdout stays parseable
    if fmt is Format.json:
        sys.stdout.write(
            json.dumps([{k: plain(v) for k, v in r.items()} for r in shown], ensure_ascii=False, default=str) + "\n"
        )
    elif fmt is Format.csv:
        names = list(rows[0]) if rows else []
        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(names)
        for r in shown:
            writer.writerow(
                [
                    json.dumps(v, default=str) if isinstance(v, (dict, list)) else ("" if v is None else plain(v))
                    for v in (r[n] for n in names)
                ]
            )
    else:
        columns = table_columns or {n: (lambda r, n=n: r[n]) for n in (rows[0] if rows else [])}
        table = Table(title=escape(title) if title else None, box=box.SIMPLE_HEAD, pad_edge=False)
        cells = [[_cell(get(r)) for get in columns.values()] for r in shown]
        # a cell wraps between words (`[0.05, 0.7]`) or after a `_`, never inside a word
        # (`top1_majority_ba`/`seline`); only what cannot fit so is folded
        widths = _fitted([list(columns), *cells], console.width)
        if widths is not None:  # too wide as it is: each cell in lines of its column's width
            cells = [[_wrap(c, w) for c, w in zip(row, widths)] for row in cells]
        for i, name in enumerate(columns):
            table.add_column(name, overflow="fold", width=widths[i] if widths else None)
        for row in cells:
            table.add_row(*(Text(c) for c in row))
        console.print(table)
    sys.stdout.flush()
    if len(shown) < len(rows):
        err.print(f"... {len(rows) - len(shown)} more rows (raise --max-rows to see them)")


def _fitted(rows: list[list[str]], width: int) -> list[int] | None:
    """Column widths that fit `width` breaking cells only between words or after a `_`, None
    when the table fits as it is (or cannot fit even so: then rich folds what it must)."""
    room = width - 3 * (len(rows[0]) - 1) - 2  # padding and the separator between columns, the edges
    if sum(max(len(line) for r in rows for line in r[i].splitlines() or [""]) for i in range(len(rows[0]))) <= room:
        return None
    widths = [_longest([r[i] for r in rows]) for i in range(len(rows[0]))]
    for i in sorted(range(len(widths)), key=lambda i: -widths[i]):
        if sum(widths) <= room:
            break
        widths[i] = max(_longest([r[i] for r in rows], split=True), room - sum(widths) + widths[i])
    return widths if sum(widths) <= room else None


def _longest(texts: list[str], split: bool = False) -> int:
    """The longest word of `texts` (at most LONGEST_WORD); with `split`, words also end after `_`."""
    words = [w for t in texts for w in (t.replace("_", "_ ") if split else t).split()]
    return min(max((len(w) for w in words), default=0), LONGEST_WORD)


def _wrap(text: str, width: int) -> str:
    """`text` in lines of at most `width`, broken between words or after a `_`."""
    lines, line = [], ""
    for word in text.replace("_", "_\0").replace(" ", " \0").split("\0"):
        if line and len(line + word.rstrip()) > width:
            lines.append(line.rstrip())
            line = ""
        line += word
    return "\n".join([*lines, line.rstrip()])


def say(message: str, *values) -> None:
    """Print a message whose `{}` slots hold data-derived values (paths, names), escaped."""
    console.print(message.format(*(escape(str(v)) for v in values)))


def say_line(text: str) -> None:
    """Print `text` as it is: no markup, no wrapping (paths stay whole for copy and paste)."""
    console.print(text, soft_wrap=True, markup=False, highlight=False)


def fail(error: Exception, suffix: str = "") -> None:
    err.print(
        f"[bold red]error:[/] {escape(str(error) or type(error).__name__)}{escape(suffix)}",
        soft_wrap=True,
        highlight=False,
    )
