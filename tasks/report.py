"""The run report: repositories in order, step durations, metrics, checkpoints, and a
plot of every metric across steps and repositories.

Written to `<home>/reports/<run_id>/report.md` with `metrics.png` beside it; the
flow also publishes the markdown as a Prefect artifact.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

from storage import atomic, catalog, metrics
from storage.proofs import read_proofs


COUNT_METRICS = {"examples", "gold_missing", "proving_errors", "proving_theorems"}


def metrics_rows(store, run_id: str) -> list[dict]:
    """Every metric row the run recorded (fresh or from a cached evaluation), `repo` naming
    the repository, ordered by trainer, metric, step, repository and split."""
    rows = [{**r, "repo": r["repository"]} for r in metrics.of_run(store, run_id)]
    return sorted(rows, key=lambda r: (r["trainer"], r["metric"], r["step"], r["repo_id"], r["split"]))


def plot_metrics(rows: list[dict], path: Path) -> Path | None:
    """One panel per (trainer, metric, split); x = step, one line per repository."""
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r["metric"] in COUNT_METRICS:
            continue  # sizes, not scores: in the table, not the plot
        panels[(r["trainer"], r["metric"], r["split"])][r["repo"] or r["repo_id"]].append((r["step"], r["value"]))
    keys = sorted(panels)
    cols = min(3, len(keys))
    nrows = (len(keys) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(5 * cols, 3.4 * nrows), squeeze=False)
    for ax, key in zip(axes.flat, keys):
        for repo, points in sorted(panels[key].items()):
            points.sort()
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=repo)
        ax.set_title(" / ".join(key), fontsize=10)
        ax.set_xlabel("curriculum step")
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[len(keys):]:
        ax.axis("off")
    fig.tight_layout()
    with atomic.atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)
    return path


def _table(headers: list[str], rows: list[list]) -> str:
    def cell(v):
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


def write_report(store, home: Path, name: str, run_id: str, steps: list[dict], step_results: list[dict],
                 failures: list[dict]) -> dict:
    folder = Path(home) / "reports" / run_id
    rows = metrics_rows(store, run_id)
    plot = plot_metrics(rows, folder / "metrics.png")
    counts = {r["repo_id"]: r for r in catalog.query(store, """
        SELECT repo_id, count(*) AS theorems, sum(num_tactics) AS tactics FROM theorems GROUP BY repo_id""").to_pylist()}
    parts = [f"# Dojoflow run `{name}`", "",
             f"Run `{run_id}`, finished {datetime.now(timezone.utc).isoformat(timespec='seconds')}.", ""]
    parts += ["## Repositories in curriculum order", "", _table(
        ["step", "repository", "repo ids", "theorems", "traced tactics"],
        [[s["step"], s["name"], ", ".join(s["repo_ids"]),
          sum(counts.get(r, {}).get("theorems", 0) for r in s["repo_ids"]),
          sum(counts.get(r, {}).get("tactics", 0) or 0 for r in s["repo_ids"])] for s in steps]), ""]
    parts += ["## Steps", "", _table(
        ["step", "trainer", "train", "evaluate", "train seconds", "step wall seconds", "checkpoint", "notes"],
        [[s["step"], tr, t.get("train_state", ""), t.get("evaluate_state", ""), f"{t['seconds']:.1f}",
          f"{s.get('wall_seconds', 0.0):.1f}", f"`{t['checkpoint']['path']}`",
          ("skipped: " + t["checkpoint"]["skipped"]) if t["checkpoint"].get("skipped") else ""]
         for s in step_results for tr, t in s["trainers"].items()]), ""]
    if rows:
        parts += ["## Metrics", "", _table(
            ["step", "trainer", "repository", "split", "metric", "value", "n"],
            [[r["step"], r["trainer"], r["repo"] or r["repo_id"], r["split"], r["metric"], float(r["value"]), r["count"]]
             for r in rows]), ""]
    if plot:
        parts += [f"![metrics across steps]({plot})", "", f"Plot: `{plot}`", ""]
    proofs = read_proofs(store, run_id)
    if proofs:
        parts += ["## Proofs found", "", "Checked by the named checker (`replay` is the traced data, not Lean).", "",
                  _table(["repository", "split", "theorem", "checker", "axioms", "proof"],
                         [[p["repo"] or p["repo_id"], p["split"] or p["purpose"], p["full_name"], p["checker"],
                           ", ".join(p["axioms"]) or "none", "`" + "; ".join(p["tactics"]).replace("|", "\\|") + "`"]
                          for p in proofs]), ""]
    if failures:
        parts += ["## Failures", "", _table(["source", "error"], [[f["source"], f["error"]] for f in failures]), ""]
    markdown = "\n".join(parts)
    atomic.write_text(folder / "report.md", markdown)
    return {"markdown": markdown, "path": str(folder / "report.md"), "plot": str(plot) if plot else None,
            "metrics": len(rows)}
