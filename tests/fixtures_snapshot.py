"""A snapshot on disk for trainer tests, written without the store or `build_snapshot`.

`make_snapshot(tmp_path, rows)` writes Parquet parts and a manifest in the layout of
`storage/snapshot.py` and returns the `SnapshotRef` that reads them, so trainer tests
exercise the real read path (DuckDB over Parquet) on data they control.
`synthetic_rows(...)` makes Lean-like tactic rows with a learnable state -> tactic
mapping.

Layout (paths relative to the store root):

    snapshots/<id>/manifest.json
    snapshots/<id>/parts/<split_kind>/<split>/<repo_id>.tactics.parquet
    snapshots/<id>/parts/<split_kind>/<split>/<repo_id>.theorems.parquet
"""

from __future__ import annotations

import random
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

from storage import atomic, ids, schemas
from storage.snapshot_ref import SnapshotRef

# (goal template, tactic): the tactic is a function of the goal's shape.
_PATTERNS = [
    ("{a} : ℕ\n⊢ {a} + 0 = {a}", "simp"),
    ("{a} {b} : ℕ\n⊢ {a} + {b} = {b} + {a}", "omega"),
    ("{p} {q} : Prop\nh : {p}\n⊢ {p}", "exact h"),
    ("{p} {q} : Prop\n⊢ {p} → {q} → {p}", "intro h"),
    ("{p} {q} : Prop\nhp : {p}\nhq : {q}\n⊢ {p} ∧ {q}", "constructor"),
    ("{a} : ℕ\n⊢ {a} = {a}", "rfl"),
]
_VARS = ["n", "m", "k", "x", "y", "z", "a", "b"]
_PROPS = ["p", "q", "r", "s", "P", "Q"]


def synthetic_rows(n_per_repo: int, repo_ids=("repoA", "repoB"), seed: int = 0, splits=None) -> list[dict]:
    """`n_per_repo` one-step theorems per repository, split train/val/test round robin.

    `splits` (a list of split names) overrides the round robin, cycling over it.
    """
    rng = random.Random(seed)
    splits = list(splits or ["train", "train", "train", "val", "test"])
    rows = []
    for repo in repo_ids:
        for i in range(n_per_repo):
            goal, tactic = _PATTERNS[rng.randrange(len(_PATTERNS))]
            a, b = rng.sample(_VARS, 2)
            p, q = rng.sample(_PROPS, 2)
            rows.append(
                {
                    "repo_id": repo,
                    "full_name": f"{repo}.thm{i}",
                    "file_path": f"{repo.capitalize()}/File{i % 3}.lean",
                    "idx": 0,
                    "state_before": goal.format(a=a, b=b, p=p, q=q),
                    "tactic": tactic,
                    "split": splits[i % len(splits)],
                }
            )
    return rows


def _complete(row: dict) -> dict:
    repo = row.get("repo_id", "repoA")
    file_path = row.get("file_path", "Demo/Basic.lean")
    full_name = row.get("full_name", "demo")
    split = row.get("split", "train")
    return {
        "repo_id": repo,
        "theorem_id": row.get("theorem_id") or ids.theorem_id(repo, file_path, full_name),
        "file_path": file_path,
        "full_name": full_name,
        "idx": int(row.get("idx", 0)),
        "state_before": row["state_before"],
        "tactic": row["tactic"],
        "state_after": row.get("state_after", "no goals"),
        "annotated_tactic": row.get("annotated_tactic", row["tactic"]),
        "annotations": row.get("annotations", []),
        "split_random": row.get("split_random", split),
        "split_novel_premises": row.get("split_novel_premises", split),
    }


def make_snapshot(tmp_path: Path, rows: list[dict], repo_ids=None) -> SnapshotRef:
    """Write `rows` (tactic dicts; see `_complete` for defaults) as a snapshot under `tmp_path/store`.

    Each row needs `state_before` and `tactic`; `repo_id`, `full_name`, `file_path`,
    `idx` and `split` (or `split_random` / `split_novel_premises`) default sensibly.
    Every (split kind, split) key is present in the manifest, with no files where a
    split has no rows. `repo_ids` defaults to the repositories of the rows.
    """
    root = Path(tmp_path) / "store"
    full = [_complete(r) for r in rows]
    repos = tuple(sorted(set(repo_ids or (r["repo_id"] for r in full))))
    snapshot_id = ids.stable_hash([repos, full], 16)
    snap_dir = Path("snapshots") / snapshot_id

    steps = defaultdict(int)
    for r in full:
        steps[r["theorem_id"]] += 1

    parts: dict = {}
    counts: dict = {}
    for kind in schemas.SPLIT_KINDS:
        parts[kind] = {}
        for split in schemas.SPLITS:
            entry = {"tactics": [], "theorems": []}
            for repo in repos:
                mine = [r for r in full if r["repo_id"] == repo and r[f"split_{kind}"] == split]
                if not mine:
                    continue
                tactic_rows = [{**r, "num_tactics": steps[r["theorem_id"]]} for r in mine]
                tactics = pa.Table.from_pylist(tactic_rows, schema=schemas.SNAPSHOT_TACTICS)
                seen: dict[str, dict] = {}
                for r in mine:
                    seen.setdefault(
                        r["theorem_id"],
                        {
                            "repo_id": repo,
                            "theorem_id": r["theorem_id"],
                            "file_path": r["file_path"],
                            "full_name": r["full_name"],
                            "theorem_statement": None,
                            "start": [1, 0],
                            "end": [2, 0],
                            "num_tactics": steps[r["theorem_id"]],
                            "has_sorry": False,
                            "split_random": r["split_random"],
                            "split_novel_premises": r["split_novel_premises"],
                            "export_order": len(seen),
                            "extra": None,
                        },
                    )
                theorems = pa.Table.from_pylist(list(seen.values()), schema=schemas.THEOREMS)
                rel = snap_dir / "parts" / kind / split
                atomic.write_parquet(root / rel / f"{repo}.tactics.parquet", tactics)
                atomic.write_parquet(root / rel / f"{repo}.theorems.parquet", theorems)
                entry["tactics"].append(str(rel / f"{repo}.tactics.parquet"))
                entry["theorems"].append(str(rel / f"{repo}.theorems.parquet"))
                counts[f"{kind}/{split}/{repo}"] = len(mine)
            parts[kind][split] = entry

    manifest = {
        "snapshot_id": snapshot_id,
        "repo_ids": list(repos),
        "settings": {"fixture": True},
        "format_version": schemas.FORMAT_VERSION,
        "parts": parts,
        "corpus": {"premises": [], "files": []},
        "excluded": None,
    }
    manifest_path = root / snap_dir / "manifest.json"
    atomic.write_json(manifest_path, manifest)
    return SnapshotRef(
        snapshot_id=snapshot_id,
        store_root=str(root),
        repo_ids=repos,
        manifest_path=str(manifest_path),
        counts=counts,
    )
