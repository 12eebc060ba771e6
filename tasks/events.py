"""Dojoflow's Prefect events: their names, the resource each concerns and the figures a
consumer needs (docs/operations.md). Plain functions that build `EventSpec`s; the flows emit
them (tasks/prefect_tasks/events.py `emit`), so nothing here imports Prefect.

    dojoflow.repo.new-commit        a watched branch moved (the nightly's detection)
    dojoflow.trace.failed           a repository source failed to trace (or import)
    dojoflow.checkpoint.published   a curriculum step published a checkpoint
    dojoflow.metric.regressed       an earlier repository got worse than when it was learned
    dojoflow.proof.found            a prove run ended, with its counts

Resources follow Prefect's `prefect.resource.id` convention with Dojoflow's own kinds:
`dojoflow.repo.<name>`, `dojoflow.snapshot.<id>`, `dojoflow.checkpoint.<id>`, `dojoflow.run.<id>`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from .run_records import MetricName, SplitKindName, SplitName, TrainerName

NEW_COMMIT = "dojoflow.repo.new-commit"
TRACE_FAILED = "dojoflow.trace.failed"
CHECKPOINT_PUBLISHED = "dojoflow.checkpoint.published"
METRIC_REGRESSED = "dojoflow.metric.regressed"
PROOF_FOUND = "dojoflow.proof.found"
EVENTS = (NEW_COMMIT, TRACE_FAILED, CHECKPOINT_PUBLISHED, METRIC_REGRESSED, PROOF_FOUND)


@dataclass(frozen=True)
class EventSpec:
    """One event to emit: `prefect.events.emit_event(**spec.kwargs())`."""

    event: str
    resource: dict[str, str]
    payload: dict
    related: list[dict[str, str]] = field(default_factory=list)

    def kwargs(self) -> dict:
        return {"event": self.event, "resource": self.resource, "payload": self.payload, "related": self.related}


def _resource(kind: str, ident: str, name: str | None = None, role: str | None = None, **labels) -> dict[str, str]:
    out = {"prefect.resource.id": f"dojoflow.{kind}.{ident}"}
    if name is not None:
        out["prefect.resource.name"] = str(name)
    if role is not None:
        out["prefect.resource.role"] = role
    out.update({f"dojoflow.{k}": str(v) for k, v in labels.items() if v is not None})
    return out


def repo(name: str, role: str | None = None, **labels) -> dict[str, str]:
    """`dojoflow.repo.<name>`: a repository (a watched branch, a source, a store repository).

    >>> repo("NatBasics")["prefect.resource.id"]
    'dojoflow.repo.NatBasics'
    """
    return _resource("repo", name, name, role, **labels)


def run(run_id: str, role: str | None = "run") -> dict[str, str]:
    return _resource("run", run_id, role=role)


def snapshot(snapshot_id: str, role: str | None = "snapshot") -> dict[str, str]:
    return _resource("snapshot", snapshot_id, role=role)


def checkpoint(checkpoint_id: str, trainer: str | None = None, role: str | None = None) -> dict[str, str]:
    return _resource("checkpoint", checkpoint_id, role=role, trainer=trainer)


# -- one function per event -------------------------------------------------------------
def new_commit(label: str, url: str, branch: str | None, commit: str, previous: str | None, run_id: str) -> EventSpec:
    """The nightly saw `commit` on a watched branch whose last processed commit was `previous`."""
    return EventSpec(
        NEW_COMMIT,
        repo(label, url=url, branch=branch),
        {"repository": label, "url": url, "branch": branch, "commit": commit, "previous": previous, "run_id": run_id},
        [run(run_id)],
    )


def trace_failed(label: str, source: dict, error: str, run_id: str, pipeline: str) -> EventSpec:
    """A source of a curriculum run failed to trace or import; `source` is its config (a dict)."""
    where = {k: source.get(k) for k in ("repo", "commit", "export", "sample") if source.get(k)}
    return EventSpec(
        TRACE_FAILED,
        repo(label),
        {"repository": label, **where, "error": error, "run_id": run_id, "pipeline": pipeline},
        [run(run_id)],
    )


def checkpoint_published(
    ref: dict, home: str, step: int, of: int, repository: str, run_id: str, pipeline: str, cached: bool
) -> EventSpec:
    """A curriculum step (`step` of `of`) published the checkpoint `ref` (CheckpointRef.to_dict()).
    Its resource carries the labels an automation matches on: `dojoflow.trainer`,
    `dojoflow.cached` and `dojoflow.last-step` ("true"/"false")."""
    labels = {"prefect.resource.name": f"{ref['trainer']} step {step}", "dojoflow.trainer": ref["trainer"]}
    labels |= {"dojoflow.cached": _flag(cached), "dojoflow.last-step": _flag(step == of)}
    return EventSpec(
        CHECKPOINT_PUBLISHED,
        {**checkpoint(ref["checkpoint_id"]), **labels},
        {
            "checkpoint_id": ref["checkpoint_id"],
            "trainer": ref["trainer"],
            "path": ref["path"],
            "parent_id": ref.get("parent_id"),
            "snapshot_id": ref["snapshot_id"],
            "home": home,
            "step": step,
            "steps": of,
            "repository": repository,
            "run_id": run_id,
            "pipeline": pipeline,
            "cached": cached,  # served from the task cache, not trained by this run
            "skipped": ref.get("skipped"),
        },
        [snapshot(ref["snapshot_id"]), repo(repository, role="learned"), run(run_id)],
    )


def _flag(b: bool) -> str:
    return "true" if b else "false"


def proof_found(run_id: str, checkpoint_id: str, records: list, untried: list, names: dict) -> EventSpec:
    """A prove run's counts: theorems tried, proved and not tried, per repository (`names`: repo id -> name).
    `records`: the search's records (tasks/proving/records.py `SearchRecord`)."""
    per: dict[str, dict] = {}
    for r in records:
        counts = per.setdefault(names.get(r.repo_id, r.repo_id), {"tried": 0, "proved": 0})
        counts["tried"] += 1
        counts["proved"] += bool(r.proof)
    proved = [r.full_name for r in records if r.proof]
    return EventSpec(
        PROOF_FOUND,
        run(run_id, role=None),
        {
            "run_id": run_id,
            "checkpoint_id": checkpoint_id,
            "tried": len(records),
            "proved": len(proved),
            "untried": len(untried),
            "repositories": per,
            "theorems": proved[:100],  # the first 100 names; the catalog's `proofs` table has all
        },
        [checkpoint(checkpoint_id, role="generator"), *(repo(n, role="searched") for n in sorted(per))],
    )


# -- forgetting that pages someone -----------------------------------------------------
def regressions(rows: list[dict], step: int, margin: float) -> list[Regression]:
    """The metrics of step `step` on repositories learned at an earlier step that are worse
    than when learned by more than that value's 95% interval and `margin`.

    `rows`: a run's metric rows (storage.metrics.of_run). A repository is learned at the first
    step whose `step_repo_id` is it; its value then is the reference. With the metric's declared
    direction (the row's `direction`, declared where the metric is computed:
    tasks/metric_registry.py), "higher is better" regresses below `ci_low - margin` (the
    value itself where no interval was computed), "lower is better" above `ci_high + margin`.
    Only skills (`kind` score) regress: counts, costs, diagnostics and baselines never do.

    >>> rows = [
    ...     dict(step=1, step_repo_id="a", repo_id="a", repository="A", trainer="sft", split_kind="random",
    ...          split="test", metric="top1_accuracy", value=0.8, count=50, ci_low=0.7, ci_high=0.88,
    ...          direction="higher", kind="score"),
    ...     dict(step=2, step_repo_id="b", repo_id="a", repository="A", trainer="sft", split_kind="random",
    ...          split="test", metric="top1_accuracy", value=0.6, count=50, ci_low=0.5, ci_high=0.7,
    ...          direction="higher", kind="score"),
    ... ]
    >>> [(r.repository, r.value_when_learned, r.value, r.threshold) for r in regressions(rows, 2, 0.05)]
    [('A', 0.8, 0.6, 0.65)]
    >>> regressions(rows, 2, 0.2)
    []
    """
    learned: dict[tuple, dict] = {}
    for r in sorted(rows, key=lambda r: r["step"]):
        if r["step_repo_id"] == r["repo_id"] and r["value"] is not None:
            learned.setdefault(_key(r), r)
    out = []
    for r in rows:
        ref = learned.get(_key(r))
        way = r.get("direction") if r.get("kind") == "score" else None
        if r["step"] != step or ref is None or ref["step"] >= step or way is None or r["value"] is None:
            continue
        if way == "higher":
            threshold = (ref["ci_low"] if ref.get("ci_low") is not None else ref["value"]) - margin
            worse = r["value"] < threshold
        else:
            threshold = (ref["ci_high"] if ref.get("ci_high") is not None else ref["value"]) + margin
            worse = r["value"] > threshold
        if worse:
            out.append(_regression(ref, r, way, margin, threshold))
    return sorted(out, key=lambda r: (r.trainer, r.repository, r.split, r.metric))


def _key(r: dict) -> tuple:
    return (r["trainer"], r["repo_id"], r["split_kind"], r["split"], r["metric"])


class Regression(BaseModel):
    """A metric of a repository learned at an earlier step that got worse (`regressions`): the
    `dojoflow.metric.regressed` event's payload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    trainer: TrainerName
    repository: str = Field(description="The repository's name (its id where it has none).")
    repo_id: str = Field(description="The repository's id.")
    split_kind: SplitKindName
    split: SplitName
    metric: MetricName
    direction: str = Field(description="Which way is better: higher or lower (declared with the metric).")
    learned_step: int = Field(description="The step that learned the repository.")
    value_when_learned: float = Field(description="The metric at that step.")
    interval_when_learned: tuple[float | None, float | None] = Field(description="Its 95% interval then.")
    count_when_learned: int | None = Field(description="How many items it was over then.")
    step: int = Field(description="The step that made it worse.")
    value: float = Field(description="The metric now.")
    interval: tuple[float | None, float | None] = Field(description="Its 95% interval now.")
    count: int | None = Field(description="How many items it is over now.")
    worse_by: float = Field(description="How much worse, in the metric's units (> 0).")
    margin: float = Field(description="The margin beyond the interval (evaluation.regression_margin).")
    threshold: float = Field(description="The value past which it regresses.")
    checkpoint_id: str | None = Field(description="The checkpoint evaluated now.")


def _regression(ref: dict, now: dict, way: str, margin: float, threshold: float) -> Regression:
    sign = 1 if way == "higher" else -1
    return Regression(
        trainer=now["trainer"],
        repository=now.get("repository") or now["repo_id"],
        repo_id=now["repo_id"],
        split_kind=now["split_kind"],
        split=now["split"],
        metric=now["metric"],
        direction=way,
        learned_step=ref["step"],
        value_when_learned=ref["value"],
        interval_when_learned=(ref.get("ci_low"), ref.get("ci_high")),
        count_when_learned=ref.get("count"),
        step=now["step"],
        value=now["value"],
        interval=(now.get("ci_low"), now.get("ci_high")),
        count=now.get("count"),
        worse_by=round(sign * (ref["value"] - now["value"]), 12),
        margin=margin,
        threshold=round(threshold, 12),
        checkpoint_id=now.get("checkpoint_id"),
    )


def metric_regressed(regression: Regression, run_id: str, pipeline: str) -> EventSpec:
    """One regression (`regressions`), as the event: resource the repository, related the run
    and the checkpoint evaluated; its payload the regression's fields (intervals as lists)."""
    related = [run(run_id)]
    if regression.checkpoint_id:
        related.append(checkpoint(regression.checkpoint_id, regression.trainer, role="evaluated"))
    return EventSpec(
        METRIC_REGRESSED,
        repo(regression.repository, repo_id=regression.repo_id),
        {**regression.model_dump(mode="json"), "run_id": run_id, "pipeline": pipeline},
        related,
    )
