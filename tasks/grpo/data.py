"""Prompts for GRPO: proof states (tactic mode) or theorem statements (proof mode).

Rows are TRL conversational prompts plus the columns the Lean rewards read
(`tasks.grpo.rewards`): `theorem` (a TheoremSpec as JSON), `prefix` (JSON list of
the traced tactics that lead from the theorem's start to the state), `goals` (the
state) and `tactic` (the traced tactic from it, used by the progress reward).

From a snapshot: the training split's tactics (tactic mode) or its theorems with a
tactic proof (proof mode), with TheoremSpecs from the store (`tasks.lean.theorems`).
Only states on a proof's top-level chain (each tactic starting where the previous one
left) are prompts, so a backend reaches them by running the prefix; tactics through
`sorry`, and states after one, are left out. At most
`max_prompts` rows are kept, chosen by a fixed hash so reruns see the same ones.

    python -c "help('tasks.grpo.data')"
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict

from storage.ids import unit_interval
from storage.snapshot_ref import SnapshotRef
from tasks.sft.data import fit_state, is_sorry, prompt_messages, read_tactics


def spec_json(spec) -> str:
    d = asdict(spec)
    d["start"] = list(spec.start) if spec.start is not None else None
    return json.dumps(d, sort_keys=True, ensure_ascii=False)


def proof_prompt(statement: str, context: str = "") -> str:
    """The user message of proof mode: the context (if any), then the statement ending in `:= by`."""
    head = statement.strip()
    head = head[: -len(":= by")].rstrip() if head.endswith(":= by") else head.removesuffix(":=").rstrip()
    return (context.strip() + "\n\n" if context.strip() else "") + head + " := by"


def _keep(rows: list[dict], limit: int | None, key) -> list[dict]:
    if limit is None or len(rows) <= limit:
        return rows
    return sorted(rows, key=lambda r: unit_interval("grpo-prompt", *key(r)))[:limit]


def _store(snapshot: SnapshotRef):
    from pathlib import Path

    from storage.store import Store

    return Store(Path(snapshot.store_root))


def _specs(store, repo_ids) -> dict[tuple[str, str, str], object]:
    from tasks.lean.theorems import load_theorems

    return {(s.repo_id, s.file_path, s.full_name): s for s in load_theorems(store, list(repo_ids))}


def tactic_rows(
    snapshot: SnapshotRef,
    split_kind: str,
    system_prompt: str,
    *,
    tokenizer=None,
    max_state_tokens: int | None = None,
    max_prompts: int | None = None,
    store=None,
) -> list[dict]:
    """One row per traced tactic of the training split whose state is reachable without `sorry`."""
    table = read_tactics(snapshot, split_kind, "train")
    cols = table.select(
        ["repo_id", "file_path", "full_name", "idx", "state_before", "tactic", "state_after"]
    ).to_pylist()
    by_theorem: dict[tuple, list[dict]] = defaultdict(list)
    for r in cols:
        by_theorem[(r["repo_id"], r["file_path"], r["full_name"])].append(r)
    specs = _specs(store or _store(snapshot), sorted({r["repo_id"] for r in cols}))
    rows = []
    for key, steps in by_theorem.items():
        spec = specs.get(key)
        if spec is None:
            continue
        prefix: list[str] = []
        ordered = sorted(steps, key=lambda s: s["idx"])
        state = ordered[0]["state_before"] if ordered and ordered[0]["idx"] == 0 else None
        for step in ordered:
            if step["state_before"] != state:
                continue  # a nested tactic (inside a `·` block): not reachable by the top-level chain
            if is_sorry(step["tactic"]):
                break  # later states are reached through sorry
            rows.append(
                {
                    "prompt": prompt_messages(
                        system_prompt, fit_state(step["state_before"], tokenizer, max_state_tokens)
                    ),
                    "theorem": spec_json(spec),
                    "prefix": json.dumps(prefix, ensure_ascii=False),
                    "goals": step["state_before"],
                    "tactic": step["tactic"].strip(),
                    "repo_id": key[0],
                }
            )
            prefix = prefix + [step["tactic"]]
            state = step["state_after"]
    return _keep(rows, max_prompts, lambda r: (r["theorem"], r["prefix"]))


def proof_rows(
    specs, system_prompt: str, *, contexts: dict[str, str] | None = None, max_prompts: int | None = None
) -> list[dict]:
    """One row per theorem: the prompt asks for a whole proof of its statement."""
    contexts = contexts or {}
    rows = [
        {
            "prompt": prompt_messages(system_prompt, proof_prompt(s.statement, contexts.get(s.full_name, ""))),
            "theorem": spec_json(s),
            "prefix": "[]",
            "goals": "",
            "tactic": "",
            "repo_id": s.repo_id,
        }
        for s in specs
    ]
    return _keep(rows, max_prompts, lambda r: (r["theorem"],))


def snapshot_theorems(snapshot: SnapshotRef, split_kind: str, split: str, repo_ids=None, store=None) -> list:
    """TheoremSpecs of the snapshot's theorems of one split that have a traced tactic proof and no sorry."""
    table = snapshot.theorems(split_kind, split, repo_ids=repo_ids)
    wanted = {
        (r["repo_id"], r["file_path"], r["full_name"])
        for r in table.select(["repo_id", "file_path", "full_name", "num_tactics", "has_sorry"]).to_pylist()
        if r["num_tactics"] > 0 and not r["has_sorry"]
    }
    if not wanted:
        return []
    specs = _specs(store or _store(snapshot), sorted({k[0] for k in wanted}))
    return [specs[k] for k in sorted(wanted) if k in specs]


def to_dataset(rows: list[dict]):
    import datasets

    return datasets.Dataset.from_list(rows)
