"""The run report: repositories in order, step durations, metrics, checkpoints, and a
plot with one panel per question a reader asks (learning, forgetting, proving).

Written to `<home>/reports/<run_id>/report.md` with `metrics.png` beside it (linked
relatively, so the folder can be moved or shared). The flow publishes the markdown as a
Prefect artifact with the plot inlined as a data URI (`inline_plot`): the UI's browser cannot
load a local file, but renders data-URI images (tests/e2e/test_report_in_ui.py checks it).
"""

from __future__ import annotations

import base64
import shutil
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

from storage import atomic, catalog, forgetting, metrics
from storage.ids import stable_hash
from storage.proofs import read_proofs
from storage.theorem_results import read_results

from .card import contamination_section
from .expert import report as expert_report
from .forgetting import forgetting_section
from .formatting import SIGNIFICANT_DIGITS, markdown_table
from .formatting import row_interval as interval_text
from .metric_registry import QUESTIONS, is_size, read_meaning
from .plan import SourceFailure, Step
from .proving.summary import group_label, proving_section
from .run_records import Report, StepResult

PLOT_FILE = "metrics.png"
PLOT_ALT = "metrics across steps"


def rounded(value):
    """A metric as a reader wants it: a few significant digits (0.3333333 -> 0.333)."""
    return float(f"{value:.{SIGNIFICANT_DIGITS}g}") if isinstance(value, float) else value


def metrics_rows(store, run_id: str) -> list[dict]:
    """Every metric row the run recorded (fresh or from a cached evaluation), `repo` naming
    the repository, ordered by trainer, metric, step, repository and split."""
    rows = [{**r, "repo": r["repository"]} for r in read_meaning(metrics.of_run(store, run_id))]
    return sorted(rows, key=lambda r: (r["trainer"], r["metric"], r["step"], r["repo_id"], r["split"]))


def plot_metrics(rows: list[dict], path: Path, cache: Path | None = None) -> Path | None:
    """The plot of `metrics_figure`, as a PNG at `path` (None when there is nothing to plot).
    With `cache` (a folder), a plot of the same points is copied from there instead of
    drawn again: a cached rerun then imports no matplotlib."""
    key = stable_hash(
        [
            [r["trainer"], r["metric"], r["split"], r["repo"] or r["repo_id"], r["step"], r["value"]]
            + [r.get("ci_low"), r.get("ci_high"), r.get("question"), r.get("step_repo_id")]
            for r in rows
            if not is_size(r)
        ],
        20,
    )
    cached = cache / f"{key}.png" if cache is not None else None
    if cached is not None and cached.is_file():
        with atomic.atomic_path(path) as tmp:
            shutil.copyfile(cached, tmp)
        return path
    fig = metrics_figure(rows)
    if fig is None:
        return None
    import matplotlib.pyplot as plt

    with atomic.atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)
    if cached is not None:
        with atomic.atomic_path(cached) as tmp:
            shutil.copyfile(path, tmp)
    return path


# Units the panels share one axis in (a figure in another unit, a loss or MAE, is in the tables).
PLOTTED_UNITS = {"share": 1.0, "percent": 0.01, "correlation": 1.0}
SPLIT_ORDER = ("test", "val", "train")


def plot_series(rows: list[dict]) -> dict[str, dict[tuple, list[dict]]]:
    """The points of each panel, by the question a reader asks (tasks/metric_registry.py QUESTIONS):
    `learning` (each declared learning figure on the repository its step learned, and its
    baseline beside it), `forgetting` (the same figures on repositories learned at earlier steps,
    as the change since learned: below 0 is forgotten) and `proving` (pass rates on the step's
    repository and their baseline; other repositories and benchmarks are in the tables). One split per series, the held-out one first. Points are rows, scaled to 0..1."""
    rows = [r for r in rows if r.get("unit") in PLOTTED_UNITS and r["value"] is not None]
    by_key = {(r["step"], r["trainer"], r["repo_id"], r["split"], r["metric"]): r for r in rows}
    split = {}
    for r in rows:
        key = (r["trainer"], r["metric"])
        order = SPLIT_ORDER.index(r["split"]) if r["split"] in SPLIT_ORDER else len(SPLIT_ORDER)
        split[key] = min(split.get(key, (order, r["split"])), (order, r["split"]))
    learned = {}
    for r in sorted(rows, key=lambda r: r["step"]):
        if r.get("step_repo_id", r["repo_id"]) == r["repo_id"]:
            learned.setdefault((r["trainer"], r["repo_id"], r["split"], r["metric"]), r)
    panels: dict[str, dict[tuple, list[dict]]] = {q: defaultdict(list) for q in QUESTIONS}
    for r in rows:
        if (
            r.get("kind") != "score"
            or r.get("question") not in QUESTIONS
            or r["split"] != split[(r["trainer"], r["metric"])][1]
        ):
            continue
        base = by_key.get((r["step"], r["trainer"], r["repo_id"], r["split"], r.get("baseline_metric")))
        own = r.get("step_repo_id", r["repo_id"]) == r["repo_id"]
        if own:  # the step's own repository: what it learned, what it proves
            panels[r["question"]][(r["trainer"], r["metric"], r["split"])].append({**r, "baseline": base})
        ref = learned.get((r["trainer"], r["repo_id"], r["split"], r["metric"]))
        if not own and r["question"] == "learning" and ref is not None and ref["step"] < r["step"]:
            sign = -1.0 if r.get("direction") == "lower" else 1.0
            change = {"value": sign * (r["value"] - ref["value"]), "baseline": None}
            for end, other in (("ci_low", "ci_high"), ("ci_high", "ci_low")):
                bound = r.get(end if sign > 0 else other)
                change[end] = None if bound is None else sign * (bound - ref["value"])
            key = (r["trainer"], r["metric"], r["split"], r["repo"] or r["repo_id"])
            panels["forgetting"][key].append({**r, **change})
    return {q: dict(p) for q, p in panels.items() if p}


def metrics_figure(rows: list[dict]):
    """One panel per question a reader asks (learning, forgetting, proving; plot_series): x = step,
    one line per figure with its 95% interval drawn, its baseline dashed beside it in the same colour."""
    panels = plot_series(rows)
    if not panels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    palette = plt.get_cmap("tab10")
    for ax, (question, series) in zip(axes.flat, panels.items()):
        for i, (label, points) in enumerate(sorted(series.items())):
            points.sort(key=lambda r: r["step"])
            colour = palette(i % palette.N)
            dodge = (i - (len(series) - 1) / 2) * 0.04  # equal figures side by side, not hidden behind each other
            _draw(ax, points, " / ".join(label), colour, dodge)
            bases = [{**p["baseline"], "step": p["step"]} for p in points if p.get("baseline")]
            if bases:
                _draw(ax, bases, f"{bases[0]['metric']} (baseline)", colour, dodge, dashed=True)
        if question == "forgetting":
            ax.axhline(0.0, color="grey", linewidth=0.8)
        ax.set_title(PANEL_TITLES[question], fontsize=10)
        ax.set_xlabel("curriculum step")
        ax.set_xticks(sorted({p["step"] for points in series.values() for p in points}))  # steps, not 0.96
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2, frameon=False)
    fig.tight_layout()
    return fig


PANEL_TITLES = {
    "learning": "learning: each trainer on the repository it learned",
    "forgetting": "forgetting: change on earlier repositories since learned",
    "proving": "proving: pass rates beside the baseline",
}


def _draw(ax, points: list[dict], label: str, colour, dodge: float = 0.0, dashed: bool = False) -> None:
    """A line with its 95% interval as error bars, in the plotted scale (PLOTTED_UNITS)."""
    scale = [PLOTTED_UNITS.get(p.get("unit"), 1.0) for p in points]
    ys = [p["value"] * s for p, s in zip(points, scale)]
    low = [max(0.0, y - p["ci_low"] * s) if p.get("ci_low") is not None else 0.0 for p, y, s in zip(points, ys, scale)]
    high = [
        max(0.0, p["ci_high"] * s - y) if p.get("ci_high") is not None else 0.0 for p, y, s in zip(points, ys, scale)
    ]
    ax.errorbar(
        [p["step"] + dodge for p in points], ys, yerr=[low, high], marker="o", capsize=3, label=label, color=colour,
        linestyle="--" if dashed else "-", alpha=0.7 if dashed else 1.0,
    )  # fmt: skip


def inline_plot(markdown: str, plot: str | Path | None) -> str:
    """The report's markdown with the plot as a data URI instead of the local file's name."""
    if not plot or not Path(plot).is_file():
        return markdown
    from .expert.report import PLOT_ALT as EXPERT_ALT
    from .expert.report import PLOT_FILE as EXPERT_FILE

    for alt, path in ((PLOT_ALT, Path(plot)), (EXPERT_ALT, Path(plot).parent / EXPERT_FILE)):
        if path.is_file():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            markdown = markdown.replace(f"![{alt}]({path.name})", f"![{alt}](data:image/png;base64,{data})")
    return markdown


def _table(headers: list[str], rows: list[list]) -> str:
    return "\n".join(markdown_table(headers, rows))


def _section(title: str, headers: list[str], rows: list[list], *after: str) -> list[str]:
    """A `## title` section holding one table, then `after` (its lines)."""
    return [f"## {title}", "", _table(headers, rows), "", *after]


def write_report(
    store,
    home: Path,
    name: str,
    run_id: str,
    steps: list[Step],
    step_results: list[StepResult],
    failures: list[SourceFailure],
) -> Report:
    folder = Path(home) / "reports" / run_id
    rows = metrics_rows(store, run_id)
    step_results = StepResult.all(step_results)
    results_json = [s.model_dump(mode="json") for s in step_results]  # as the terminal reads a flow's result
    rounds = expert_report.round_checkpoints(results_json)  # expert iteration's rounds: their own section
    per_step = [r for r in rows if r["trainer"] != expert_report.TRAINER and r["checkpoint_id"] not in rounds]
    plot = plot_metrics(per_step, folder / PLOT_FILE, cache=Path(home) / "reports" / ".plots")
    parts = [
        f"# Dojoflow run `{name}`",
        "",
        f"Run `{run_id}`, finished {datetime.now(UTC).isoformat(timespec='seconds')}.",
        "",
    ]
    expert = expert_report.section(results_json, rows, folder)  # draws its plot: outside the reads below
    with catalog.reading(store):  # the sections' queries back to back: one connection (no drawing inside)
        parts += _repositories_section(store, steps)
        parts += _steps_section(home, step_results)
        if plot:  # before the metrics table, which has a row per step, trainer, repository, split and metric
            parts += ["## Plot", "", f"![{PLOT_ALT}]({PLOT_FILE})", "", f"Also at `{plot}`.", ""]
        parts += _metrics_section(rows)
        parts += expert
        parts += proving_section(
            [r for r in rows if r["checkpoint_id"] not in rounds], read_results(store, run_id, status="untried")
        )
        parts += forgetting_section(*forgetting.of_run(store, run_id))
        parts += contamination_section(store, [s.snapshot for s in step_results if s.snapshot])
        parts += _proofs_section(_published(store, read_proofs(store, run_id)))
    if failures:
        parts += _section("Failures", ["source", "error"], [[f.source, f.error] for f in failures])
    markdown = "\n".join(parts)
    atomic.write_text(folder / "report.md", markdown)
    return Report(
        markdown=markdown, path=str(folder / "report.md"), plot=str(plot) if plot else None, metrics=len(rows)
    )


def _repositories_section(store, steps: list[Step]) -> list[str]:
    counts = {
        r["repo_id"]: r
        for r in catalog.query(
            store,
            """
        SELECT repo_id, count(*) AS theorems, sum(num_tactics) AS tactics FROM theorems GROUP BY repo_id""",
        ).to_pylist()
    }
    return _section(
        "Repositories in curriculum order",
        ["step", "repository", "repo ids", "theorems", "traced tactics"],
        [
            [
                s.step,
                s.name,
                ", ".join(s.repo_ids),
                sum(counts.get(r, {}).get("theorems", 0) for r in s.repo_ids),
                sum(counts.get(r, {}).get("tactics", 0) or 0 for r in s.repo_ids),
            ]
            for s in steps
        ],
    )


def _steps_section(home: Path, step_results: list[StepResult]) -> list[str]:
    return _section(
        "Steps",
        ["step", "trainer", "train", "evaluate", "train seconds", "step wall seconds", "checkpoint id", "notes"],
        [
            [
                s.step,
                tr,
                t.train_state,
                t.evaluate_state,
                f"{t.seconds:.1f}",
                f"{s.wall_seconds:.1f}",
                f"`{Path(t.checkpoint.path).name}`",
                f"skipped: {t.checkpoint.skipped}" if t.checkpoint.skipped else "",
            ]
            for s in step_results
            for tr, t in s.trainers.items()
        ],
        f"Checkpoints are folders `<id>` under `{Path(home) / 'checkpoints'}/<trainer>/` (`dojoflow checkpoints`).",
        "",
    )


def _metrics_section(rows: list[dict]) -> list[str]:
    if not rows:
        return []
    return _section(
        "Metrics",
        ["step", "trainer", "repository", "split", "metric", "value", "95% CI", "n"],
        [
            [
                r["step"],
                r["trainer"],
                group_label(r["repo"] or r["repo_id"], r),  # a benchmark's rows: its fingerprint
                r["split"],
                r["metric"],
                float(r["value"]),
                interval_text(r),
                r["count"],
            ]
            for r in rows
        ],
    )


def _published(store, proofs: list[dict]) -> list[dict]:
    """Proofs of benchmarks marked publish_proofs: false keep their row, never their text (tasks/leaderboard.py)."""
    from .leaderboard import unpublished

    groups = unpublished(store)["groups"]
    return [{**p, "tactics": ["(withheld: publish_proofs is false)"]} if p["repo_id"] in groups else p for p in proofs]


def _proofs_section(proofs: list[dict]) -> list[str]:
    if not proofs:
        return []
    return [
        "## Proofs found",
        "",
        "Checked by the named checker (`replay` is the traced data, not Lean).",
        "",
        _table(
            ["repository", "split", "theorem", "checker", "axioms", "proof"],
            [
                [
                    p["repo"] or p["repo_id"],
                    p["split"] or p["purpose"],
                    p["full_name"],
                    p["checker"],
                    ", ".join(p["axioms"]) or "none",
                    "`" + "; ".join(p["tactics"]) + "`",  # the table escapes a `|`
                ]
                for p in proofs
            ],
        ),
        "",
    ]
