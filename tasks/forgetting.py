"""The report's forgetting panel: per trainer, split and metric, the average forgetting and
backward transfer over the repositories learned before the last step, then each
repository's value when learned, best and latest. The figures come from the catalog's
`forgetting` views (storage/forgetting.py), the one definition of the rule."""

from __future__ import annotations

from .formatting import markdown_table as _table
from .formatting import number as _num


def forgetting_section(per_repo: list[dict], summary: list[dict]) -> list[str]:
    """Markdown lines of the panel; none when no repository was evaluated after it was learned."""
    if not summary:
        return []
    out = [
        "## Forgetting",
        "",
        "Average forgetting (best before the last step minus latest; > 0: forgotten) and backward "
        "transfer (latest minus the value when learned; > 0: improved), over the repositories "
        "learned before the last step; signs flipped for metrics where lower is better.",
        "",
    ]
    out += _table(
        ["trainer", "split", "metric", "average forgetting", "backward transfer", "repositories"],
        [
            [
                s["trainer"],
                s["split"],
                s["metric"],
                _num(s["average_forgetting"]),
                _num(s["backward_transfer"]),
                s["repositories"],
            ]
            for s in summary
        ],
    )
    out += ["", "### Per repository", ""]
    out += _table(
        [
            "trainer",
            "split",
            "metric",
            "repository",
            "learned at step",
            "when learned",
            "best",
            "latest",
            "forgetting",
            "backward transfer",
        ],
        [
            [
                r["trainer"],
                r["split"],
                r["metric"],
                r["repo"],
                r["learned_step"],
                _num(r["value_when_learned"]),
                _num(r["best"]),
                _num(r["latest"]),
                _num(r["forgetting"]),
                _num(r["backward_transfer"]),
            ]
            for r in per_repo
        ],
    )
    return out + [""]
