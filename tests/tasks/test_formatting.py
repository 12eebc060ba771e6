"""The one formatting home (tasks/formatting.py): every Markdown table of the report, the card,
the forgetting and expert panels and the proving summary keeps a cell one cell."""

from __future__ import annotations

import pytest

from tasks import card, forgetting, report
from tasks.expert import report as expert_report
from tasks.formatting import interval, markdown_table, number
from tasks.proving import summary


def cells(line: str) -> list[str]:
    """The cells of a Markdown table row, split where GitHub splits them (an unescaped `|`)."""
    out, current, escaped = [], "", False
    for ch in line.strip()[1:-1]:
        if ch == "|" and not escaped:
            out.append(current.strip())
            current = ""
        else:
            current += ch
        escaped = ch == "\\"
    return [*out, current.strip()]


@pytest.mark.parametrize(
    "build",
    [
        markdown_table,
        lambda h, r: report._table(h, r).split("\n"),
        card._table,
        forgetting._table,
        summary._md_table,
    ],
)
def test_a_cell_holding_a_bar_and_a_newline_stays_one_cell(build):
    lines = build(["theorem", "error"], [["a | b", "line one\nline two"]])
    assert len(lines) == 3  # head, rule, one row: the newline did not end the row
    assert cells(lines[2]) == ["a \\| b", "line one<br>line two"]


def test_the_expert_table_keeps_a_cell_one_cell(tmp_path):
    rnd = {"round": 1, "attempted": 2, "newly_proved": 1, "proved_so_far": 1, "own_share": 0.5, "train_loss": 0.123456}
    results = [{"step": "S|1\nx", "trainers": {"sft": {"expert_rounds": [rnd]}}}]
    rows = [line for line in expert_report.section(results, [], tmp_path) if line.startswith("| S")]
    assert [cells(r) for r in rows] == [["S\\|1<br>x", "1", "2", "1", "1", "50%", "0.123", "not measured"]]


def test_a_proof_holding_a_bar_is_escaped_once():
    proof = {"repo": "R", "repo_id": "r", "split": "test", "purpose": "", "full_name": "T", "checker": "repl"}
    lines = report._proofs_section([{**proof, "axioms": [], "tactics": ["rcases h with a | b", "simp"]}])
    row = next(line for line in lines[-2].split("\n") if line.startswith("| R"))
    assert cells(row)[-1] == "`rcases h with a \\| b; simp`"  # escaped once (by the table), not twice


def test_numbers_and_intervals_are_written_one_way():
    assert (number(0.333333), number(None), number(12), number(1234.5)) == ("0.333", "", "12", "1.23e+03")
    assert interval(0.1, 0.4567) == "[0.1, 0.457]" and interval(None, 0.3) == ""
    assert (
        summary.fmt_aggregate({"value": 0.25, "count": 20, "ci_low": 0.1, "ci_high": 0.47}) == "0.25 [0.1, 0.47] (n=20)"
    )
    assert report.interval_text({"ci_low": 0.1, "ci_high": 0.4567}) == "[0.1, 0.457]"
