"""The one home of how figures and tables are written for people: a number, an interval,
a Markdown table (the report, the card, the forgetting and expert panels, the proving
summary and the nightly report all use these).

>>> number(0.123456), number(None), number(7), interval(0.1, 0.4567)
('0.123', '', '7', '[0.1, 0.457]')
>>> print("\\n".join(markdown_table(["name", "note"], [["a|b", "two\\nlines"], [0.5, None]])))
| name | note |
|---|---|
| a\\|b | two<br>lines |
| 0.5 |  |
"""

from __future__ import annotations

SIGNIFICANT_DIGITS = 3


def number(value) -> str:
    """A figure as people read it: floats to 3 significant digits, nothing for None, others as they are."""
    if value is None:
        return ""
    return f"{value:.{SIGNIFICANT_DIGITS}g}" if isinstance(value, float) else str(value)


def interval(low, high) -> str:
    """`[low, high]` (a 95% interval), or nothing when either end is missing."""
    if low is None or high is None:
        return ""
    return f"[{number(float(low))}, {number(float(high))}]"


def row_interval(row: dict) -> str:
    """The interval of a metric row (`ci_low`, `ci_high`), where one was computed."""
    return interval(row.get("ci_low"), row.get("ci_high"))


def cell(value) -> str:
    """`value` as one Markdown table cell: a number formatted, `|` escaped, line breaks as `<br>`."""
    text = number(value)
    return "<br>".join(text.replace("|", "\\|").splitlines())


def markdown_table(headers: list[str], rows: list[list]) -> list[str]:
    """The lines of a Markdown table; every cell stays one cell whatever it holds."""
    out = ["| " + " | ".join(cell(h) for h in headers) + " |", "|" + "---|" * len(headers)]
    return out + ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
