"""The steps of a curriculum: which repositories each step adds, in which order.

Each source is one step: its own repository, plus the dependencies its export
held (trained on together, as LeanDojo does). Steps are ordered by the
difficulty of the source's own repository (storage/curriculum.py), or as given.
"""

from __future__ import annotations

from storage.curriculum import curriculum_order


def plan_steps(store, ingested: list[dict], order: str, max_steps: int | None) -> list[dict]:
    """`ingested`: ingest results (repo_ids, own repository first) -> ordered steps."""
    steps, seen = [], set()
    for result in ingested:
        new = [r for r in result["repo_ids"] if r not in seen]
        if not new:
            continue  # the same repository listed twice
        seen.update(new)
        primary = result["repo_ids"][0]
        steps.append({"primary": primary, "name": store.repository(primary)["name"], "repo_ids": new})
    if order == "curriculum" and steps:
        rank = {d.repo_id: i for i, d in enumerate(curriculum_order(store, [s["primary"] for s in steps]))}
        steps.sort(key=lambda s: rank[s["primary"]])
    steps = steps[:max_steps] if max_steps else steps
    for k, s in enumerate(steps, start=1):
        s["step"] = k
    return steps
