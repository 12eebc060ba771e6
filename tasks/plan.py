"""The steps of a curriculum: which repositories each step adds, in which order.

Each source is one step: its own repository, plus the dependencies its export
held (trained on together, as LeanDojo does). Steps are ordered by the
difficulty of the source's own repository (storage/curriculum.py), or as given.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from storage.curriculum import curriculum_order
from storage.errors import InputError

from .ingest import Ingested


class Step(BaseModel):
    """One curriculum step: the repositories it adds, and every repository seen up to it."""

    model_config = ConfigDict(frozen=True)

    step: int
    primary: str  # the source's own repository (its dependencies may come with it)
    name: str
    repo_ids: list[str]
    seen: list[str]


class SourceFailure(BaseModel):
    """A source that could not be pinned, imported or traced, and was skipped (`continue_on_source_failure`)."""

    model_config = ConfigDict(frozen=True)

    source: str  # its label
    error: str  # the error, in words


def plan_steps(
    store, ingested: list[Ingested], order: str, max_steps: int | None, failures: list[SourceFailure] = ()
) -> list[Step]:
    """`ingested`: ingest results (repo_ids, own repository first) -> ordered steps, each with
    the repositories it adds (`repo_ids`) and every repository seen up to it (`seen`).
    `failures`: the sources that could not be ingested, named in the error when none could."""
    ingested = [Ingested.of(i) for i in ingested]  # a cached result of an earlier version is its dict
    if not ingested:
        why = "; ".join(f"{f.source}: {f.error}" for f in failures) or "no sources"
        raise InputError(
            "sources",
            f"none could be imported or traced, so there is nothing to train on ({why})",
            "fix each source's error and run again",
        )
    steps, seen = [], set()
    for result in ingested:
        new = [r for r in result.repo_ids if r not in seen]
        if not new:
            continue  # the same repository listed twice
        seen.update(new)
        primary = result.repo_ids[0]
        steps.append({"primary": primary, "name": store.repository(primary)["name"], "repo_ids": new})
    if order == "curriculum" and steps:
        rank = {d.repo_id: i for i, d in enumerate(curriculum_order(store, [s["primary"] for s in steps]))}
        steps.sort(key=lambda s: rank[s["primary"]])
    steps = steps[:max_steps] if max_steps else steps
    so_far: list[str] = []
    out = []
    for k, s in enumerate(steps, start=1):
        so_far += s["repo_ids"]
        out.append(Step(step=k, seen=list(so_far), **s))
    return out


class StepContext(BaseModel):
    """Where a step's evaluation (and expert iteration's rounds) run: the home, the run, the step,
    the split kind and the repositories evaluated, as one object (tasks/evaluations.py's runs take
    it; flows/step_context.py adds the curriculum's tasks, config and snapshot)."""

    model_config = ConfigDict(frozen=True)

    home: str
    run_id: str
    step: Step  # the ordered step (number, name, repositories); step 0 outside a curriculum
    of: int  # how many steps the run has
    split_kind: str
    eval_repos: list[str]  # the repositories a step evaluation tries theorems of

    @classmethod
    def alone(cls, home: str, run_id: str, repo_ids: list[str], split_kind: str) -> StepContext:
        """A one-off evaluation outside a curriculum (`evaluate-proving`): step 0 of 1 over `repo_ids`."""
        first = repo_ids[0] if repo_ids else ""
        step = Step(step=0, primary=first, name=first, repo_ids=list(repo_ids), seen=list(repo_ids))
        return cls(home=home, run_id=run_id, step=step, of=1, split_kind=split_kind, eval_repos=list(repo_ids))
