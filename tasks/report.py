"""The run report: repositories in order, step durations, metrics, checkpoints, and a
plot of every metric across steps and repositories.

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
from .metric_registry import is_size, read_meaning
from .proving.summary import group_label, proving_section

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


def metrics_figure(rows: list[dict]):
    """One panel per (trainer, metric, split); x = step, one line per repository, each
    repository in the same colour in every panel."""
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if is_size(r):
            continue  # sizes, not scores: in the table, not the plot
        panels[(r["trainer"], r["metric"], r["split"])][r["repo"] or r["repo_id"]].append((r["step"], r["value"]))
    keys = sorted(panels)
    if not keys:
        return None
    repos = sorted({repo for lines in panels.values() for repo in lines})
    palette = plt.get_cmap("tab10" if len(repos) <= 10 else "tab20")
    colour = {repo: palette(i % palette.N) for i, repo in enumerate(repos)}
    cols = min(3, len(keys))
    nrows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.4 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for repo, points in sorted(panels[key].items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=repo, color=colour[repo])
        ax.set_title(" / ".join(key), fontsize=10)
        ax.set_xlabel("curriculum step")
        ax.set_xticks(sorted({p[0] for points in panels[key].values() for p in points}))  # steps, not 0.96
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys) :]:
        ax.axis("off")
    fig.tight_layout()
    return fig


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
    store, home: Path, name: str, run_id: str, steps: list[dict], step_results: list[dict], failures: list[dict]
) -> dict:
    folder = Path(home) / "reports" / run_id
    rows = metrics_rows(store, run_id)
    rounds = expert_report.round_checkpoints(step_results)  # expert iteration's rounds: their own section
    per_step = [r for r in rows if r["trainer"] != expert_report.TRAINER and r["checkpoint_id"] not in rounds]
    plot = plot_metrics(per_step, folder / PLOT_FILE, cache=Path(home) / "reports" / ".plots")
    parts = [
        f"# Dojoflow run `{name}`",
        "",
        f"Run `{run_id}`, finished {datetime.now(UTC).isoformat(timespec='seconds')}.",
        "",
    ]
    parts += _repositories_section(store, steps)
    parts += _steps_section(home, step_results)
    if plot:  # before the metrics table, which has a row per step, trainer, repository, split and metric
        parts += ["## Plot", "", f"![{PLOT_ALT}]({PLOT_FILE})", "", f"Also at `{plot}`.", ""]
    parts += _metrics_section(rows)
    parts += expert_report.section(step_results, rows, folder)
    parts += proving_section(
        [r for r in rows if r["checkpoint_id"] not in rounds], read_results(store, run_id, status="untried")
    )
    parts += forgetting_section(*forgetting.of_run(store, run_id))
    parts += contamination_section(store, [s["snapshot"] for s in step_results if s.get("snapshot")])
    parts += _proofs_section(_published(store, read_proofs(store, run_id)))
    if failures:
        parts += _section("Failures", ["source", "error"], [[f["source"], f["error"]] for f in failures])
    markdown = "\n".join(parts)
    atomic.write_text(folder / "report.md", markdown)
    return {
        "markdown": markdown,
        "path": str(folder / "report.md"),
        "plot": str(plot) if plot else None,
        "metrics": len(rows),
    }


def _repositories_section(store, steps: list[dict]) -> list[str]:
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
                s["step"],
                s["name"],
                ", ".join(s["repo_ids"]),
                sum(counts.get(r, {}).get("theorems", 0) for r in s["repo_ids"]),
                sum(counts.get(r, {}).get("tactics", 0) or 0 for r in s["repo_ids"]),
            ]
            for s in steps
        ],
    )


def _steps_section(home: Path, step_results: list[dict]) -> list[str]:
    return _section(
        "Steps",
        ["step", "trainer", "train", "evaluate", "train seconds", "step wall seconds", "checkpoint id", "notes"],
        [
            [
                s["step"],
                tr,
                t.get("train_state", ""),
                t.get("evaluate_state", ""),
                f"{t['seconds']:.1f}",
                f"{s.get('wall_seconds', 0.0):.1f}",
                f"`{Path(t['checkpoint']['path']).name}`",
                ("skipped: " + t["checkpoint"]["skipped"]) if t["checkpoint"].get("skipped") else "",
            ]
            for s in step_results
            for tr, t in s["trainers"].items()
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
