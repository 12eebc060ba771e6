"""Expert iteration in a run's report (tasks/report.py) and its terminal summary (flows/terminal.py):
per step and round, what was searched and found, the training loss and pass@k of the round's
checkpoint, and a plot of the train theorems proved so far over rounds and steps.

    python -c "help('tasks.expert.report')"
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from storage import atomic

from ..formatting import markdown_table, number
from .rounds import TRAINER  # noqa: F401  (tasks/report.py keeps round rows out of the step plot)

PLOT_FILE = "expert-iteration.png"
PLOT_ALT = "proved so far over rounds and steps"


def round_rows(step_results: list[dict], metric_rows: list[dict]) -> list[dict]:
    """One row per (step, round): the round's figures and, per split, the pass rates of the proving
    evaluation under the round's trained checkpoint (`{split: {metric: mean over repositories}}`)."""
    if not any(t.get("expert_rounds") for s in step_results for t in s["trainers"].values()):
        return []
    passes: dict[str, dict[str, dict[str, list[float]]]] = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for r in metric_rows:
        if r["trainer"] == "proving" and r.get("question") == "proving" and r.get("kind") == "score":  # declared
            passes[r.get("checkpoint_id")][r["split"]][r["metric"]].append(float(r["value"]))
    out = []
    for s in step_results:
        for trainer in s["trainers"].values():
            for r in trainer.get("expert_rounds") or []:
                trained = (r.get("trained") or {}).get("checkpoint_id")
                pass_k = {
                    split: {m: sum(v) / len(v) for m, v in sorted(ms.items())}
                    for split, ms in sorted(passes.get(trained, {}).items())
                }
                out.append({"step": s["step"], **r, "trained_id": trained, "pass": pass_k})
    return out


def round_checkpoints(step_results: list[dict]) -> set[str]:
    """The checkpoints the rounds trained: their proving rows belong to a round, not to the step."""
    return {r["trained_id"] for r in round_rows(step_results, []) if r["trained_id"]}


def _pass_text(pass_k: dict) -> str:
    return "; ".join(
        f"{split} " + ", ".join(f"{m}={number(float(v))}" for m, v in ms.items()) for split, ms in pass_k.items()
    )


def summary_lines(step_results: list[dict], metric_rows: list[dict]) -> list[str]:
    """Terminal lines, one per step and round."""
    lines = []
    for r in round_rows(step_results, metric_rows):
        text = (
            f"expert iteration step {r['step']} round {int(r['round'])}: searched {int(r['attempted'])}, "
            f"newly proved {int(r['newly_proved'])}, proved so far {int(r['proved_so_far'])} "
            f"({r['own_share']:.0%} by this round's checkpoint)"
        )
        if r.get("train_loss") is not None:
            text += f", train loss {r['train_loss']:.3g}"
        if r["pass"]:
            text += f"; {_pass_text(r['pass'])}"
        if r.get("trained") is None:
            text += "; nothing new, rounds end"
        lines.append(text)
    return lines


def plot(rows: list[dict], path: Path) -> Path | None:
    """Proved so far (and pass@k per split, where measured) over (step, round)."""
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"s{r['step']}r{int(r['round'])}" for r in rows]
    xs = list(range(len(rows)))
    metrics = sorted({(split, m) for r in rows for split, ms in r["pass"].items() for m in ms})
    fig, axes = plt.subplots(1, 2 if metrics else 1, figsize=(10 if metrics else 5, 3.4), squeeze=False)
    ax = axes[0][0]
    ax.plot(xs, [r["proved_so_far"] for r in rows], marker="o", label="proved so far")
    ax.bar(xs, [r["newly_proved"] for r in rows], alpha=0.3, label="newly proved")
    ax.set_title("train theorems with a verified proof", fontsize=10)
    ax.set_xticks(xs, labels)
    ax.set_xlabel("step s, round r")
    ax.legend(fontsize=7)
    if metrics:
        ax = axes[0][1]
        for split, m in metrics:
            points = [(x, r["pass"].get(split, {}).get(m)) for x, r in zip(xs, rows)]
            points = [p for p in points if p[1] is not None]
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=f"{split} {m}")
        ax.set_title("pass@k of the round's checkpoint", fontsize=10)
        ax.set_xticks(xs, labels)
        ax.set_xlabel("step s, round r")
        ax.legend(fontsize=7)
    fig.tight_layout()
    with atomic.atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=90)
    plt.close(fig)
    return path


def section(step_results: list[dict], metric_rows: list[dict], folder: Path) -> list[str]:
    """The report's `## Expert iteration` section (empty when the run had no rounds), with its plot."""
    rows = round_rows(step_results, metric_rows)
    if not rows:
        return []
    drawn = plot(rows, Path(folder) / PLOT_FILE)
    head = ["step", "round", "searched", "newly proved", "proved so far", "own share", "train loss", "pass@k"]
    cells_per_row = []
    for r in rows:
        cells = [r["step"], int(r["round"]), int(r["attempted"]), int(r["newly_proved"]), int(r["proved_so_far"])]
        cells += [f"{r['own_share']:.0%}", number(r.get("train_loss")), _pass_text(r["pass"]) or "not measured"]
        cells_per_row.append(cells)
    table = markdown_table(head, cells_per_row)
    parts = [
        "## Expert iteration",
        "",
        "Per step and round: train theorems searched, proved by the round's search (verified by the "
        "named backend's verdict rule; never `replay`), proved so far, the training loss on traced data "
        "plus found proofs, and pass@k of the round's checkpoint (the proving evaluation). "
        '`dojoflow sql "SELECT * FROM found_proofs"` lists the proofs with their provenance.',
        "",
        *table,
        "",
    ]
    if drawn:
        parts += [f"![{PLOT_ALT}]({PLOT_FILE})", ""]
    return parts
