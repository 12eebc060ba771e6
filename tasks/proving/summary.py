"""How proving results are said to a reader: an aggregate with its interval and the number
of theorems it is over, the model beside the closing-tactics baseline, what each pass@k is
comparable to, and the theorems that could not be tried. Used by the flow's log, the run
report (tasks/report.py) and the results card (tasks/card.py).

>>> fmt_aggregate({"value": 0.25, "count": 20, "ci_low": 0.1, "ci_high": 0.47})
'0.25 [0.1, 0.47] (n=20)'
"""

from __future__ import annotations

from collections import defaultdict

from ..formatting import interval, number
from ..formatting import markdown_table as _md_table
from ..metric_registry import below_baseline, meaning, parameters

BELOW = "below baseline"  # the mark of a pass rate whose whole interval is under the baseline's figure


def _pass_rates(m: dict[str, dict]) -> list[tuple[str, dict, dict | None]]:
    """(name, row, its baseline's row) of each proving score among one group's rows, by the
    declaration each row carries (tasks/metric_registry.py), not by its name."""
    scores = sorted(k for k, r in m.items() if r.get("question") == "proving" and r.get("kind") == "score")
    return [(k, m[k], m.get(m[k].get("baseline_metric") or "")) for k in scores]


def comparable_to(checker: str) -> str:
    """What a pass rate measured by `checker` (the checker prefix of a metric's name,
    tasks/proving/evaluate.py `pass_metric`) can be compared to (issue 17, §4), as the backend's
    declaration says (tasks/lean/registry.py, `comparable_to`)."""
    from tasks.lean.registry import backends

    declared = backends().get(checker)
    return declared.comparable_to if declared is not None and declared.comparable_to else f"{checker}: no note"


BASELINE_NOTE = (
    "baseline: the closing tactics (simp, rfl, decide, omega, trivial, ...) tried as a model by the same "
    "search on the same theorems; a model below it has learned nothing worth citing"
)


BENCHMARK_NOTE = (
    "benchmark rows (repository `benchmark:NAME`, split `benchmark`) are computed on a declared benchmark, "
    "named by its fingerprint; replay and the Lean backends without a header try a benchmark statement only "
    "through the store theorem with the same statement fingerprint (`theorem_results.via` names it), and "
    "count the others as untried; kimina with a header checks the benchmark's own statements"
)


def group_label(repo: str, row: dict) -> str:
    """A row's repository as a reader sees it: a benchmark with its fingerprint."""
    return f"{repo} (fingerprint `{row['benchmark']}`)" if row.get("benchmark") else repo


def checker_of(metric: str) -> str | None:
    """The checker a pass metric was decided by (`baseline_repl_pass@4` -> `repl`), else None:
    the `{checker}` its declaration's name holds (tasks/search/pass_at_k.py)."""
    return parameters(metric).get("checker")


LEVEL_NOTES = {
    "kernel_replayed": "every proof replayed by comparator in a fresh kernel (same statement, allowed axioms)",
    "elaborator_checked": "proofs checked by the elaborator's answers only: no kernel replay (comparator off or "
    "not installed), so a proof that fools the elaborator counts",
}


def _note(checker: str) -> str:
    """The note of a checker, and of its verdict level (`repl+kernel_replayed`: tasks/lean/gold_backend.py)."""
    base, _, level = checker.partition("+")
    note = comparable_to(base)
    return f"{checker}: {LEVEL_NOTES[level]}; {note}" if level in LEVEL_NOTES else note


def comparability_notes(metrics: list[str]) -> list[str]:
    """One note per checker (and the baseline) among `metrics`."""
    checkers = sorted({c for c in map(checker_of, metrics) if c})
    notes = [_note(c) for c in checkers]
    if any(parameters(m) and meaning(m)["kind"] == "baseline" for m in metrics):
        notes.append(BASELINE_NOTE)
    return notes


def fmt_aggregate(row: dict) -> str:
    """`value [low, high] (n=count)`; without an interval, `value (n=count)`."""
    ci = interval(row.get("ci_low"), row.get("ci_high"))
    return f"{number(float(row['value']))}{' ' + ci if ci else ''} (n={row['count']})"


def proving_lines(rows: list[dict], untried: list[dict] = (), names_shown: int = 10) -> list[str]:
    """Terminal lines: per repository and split, each pass@k beside the baseline's, with
    intervals and counts; errors and theorems not started; then the untried theorems, named."""
    by = defaultdict(dict)
    for r in rows:
        by[(r["repo_id"], r["split"])][r["metric"]] = r
    lines = []
    for (repo, split), m in sorted(by.items()):
        parts = []
        for name, row, base in _pass_rates(m):
            parts.append(
                f"{name}={fmt_aggregate(row)}"
                + (f" vs baseline {fmt_aggregate(base)}" if base else "")
                + (f" ({BELOW})" if below_baseline(row, base) else "")
            )
        if not parts:
            parts.append("no theorem started")
        for count in ("proving_errors", "proving_not_started", "proving_untried"):
            if count in m and m[count]["value"]:
                parts.append(f"{count.removeprefix('proving_')}={int(m[count]['value'])}")
        label = group_label(repo, next(iter(m.values()))) if repo.startswith("benchmark:") else repo.split("-")[0]
        lines.append(f"{label}/{split}: " + "; ".join(parts))
    if untried:
        lines.append(untried_sentence(untried, names_shown))
    return lines


def untried_sentence(untried: list, names_shown: int = 5) -> str:
    """`3 theorems cannot be tried: 2 no statement: ... (A, B); 1 no file (C)`: every reason
    with how many it holds back and (up to `names_shown` per reason) which. `untried`: records
    (tasks/proving/records.py `Untried`) or their dicts."""
    by_reason: dict[str, list[str]] = defaultdict(list)
    for u in untried:
        u = u if isinstance(u, dict) else u.model_dump()
        by_reason[u["reason"]].append(u["full_name"])
    parts = []
    for reason, names in by_reason.items():
        more = f" and {len(names) - names_shown} more" if len(names) > names_shown else ""
        parts.append(f"{len(names)} {reason} ({', '.join(names[:names_shown])}{more})")
    return f"{len(untried)} theorems cannot be tried: " + "; ".join(parts)


def proving_section(rows: list[dict], untried: list[dict], names_shown: int = 50) -> list[str]:
    """Markdown: each pass@k with its interval and number of theorems beside the baseline's,
    per step, repository and split; errors, theorems not started, what each figure is
    comparable to; and the theorems that could not be tried, named."""
    proving = [r for r in rows if r["trainer"] == "proving"]
    if not proving and not untried:
        return []
    by = defaultdict(dict)
    for r in proving:
        repo = group_label(r.get("repo") or r.get("repository") or r["repo_id"], r)
        by[(r["step"], repo, r["split"])][r["metric"]] = r
    table = []
    for (step, repo, split), m in sorted(by.items()):
        for name, row, base in _pass_rates(m):
            counts = [
                int(m[c]["value"]) if c in m else 0
                for c in ("proving_errors", "proving_not_started", "proving_untried")
            ]
            table.append(
                [
                    step,
                    repo,
                    split,
                    name,
                    fmt_aggregate(row) + (f" **{BELOW}**" if below_baseline(row, base) else ""),
                    fmt_aggregate(base) if base else "not measured",
                    *counts,
                ]
            )
    out = ["## Proving", ""]
    if table:
        headers = ["step", "repository", "split", "metric", "model [95% CI] (n)", "baseline [95% CI] (n)"]
        out += _md_table(headers + ["errors", "not started", "untried"], table) + [""]
    notes = comparability_notes([r["metric"] for r in proving])
    if any(r.get("benchmark") for r in proving):
        notes.append(BENCHMARK_NOTE)
    if notes:
        out += ["What these figures are comparable to:", ""] + [f"- {n}" for n in notes] + [""]
    out += [
        "pass@k is over the theorems that started (ReProver's rule: a crash during search is a failure, "
        "a theorem proved by any attempt is proved); intervals are 95%, Wilson's for 0/1 scores, else a "
        "seeded bootstrap over theorems (docs/evaluation.md).",
        "",
    ]
    # one row per theorem, not per step that could not try it (theorem_results has one per step)
    untried = list({(u["repo_id"], u["split"], u["full_name"]): u for u in reversed(untried)}.values())[::-1]
    if untried:
        out += [f"### Theorems that could not be tried ({len(untried)})", ""]
        shown = untried[:names_shown]
        out += _md_table(
            ["repository", "split", "theorem", "reason"],
            [[group_label(u.get("repo") or u["repo_id"], u), u["split"], u["full_name"], u["reason"]] for u in shown],
        )
        if len(untried) > names_shown:
            out.append(f"\n... and {len(untried) - names_shown} more (`theorem_results` where status = 'untried').")
        out.append("")
    return out
