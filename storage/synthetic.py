"""Synthetic LeanDojo exports, seeded, for tests and benchmarks.

`write_synthetic_export(out, name, num_theorems, tactics_per_theorem, seed)` writes
a folder in the LeanDojo layout whose theorems, tactics, annotated premises and
corpus are made up but well-formed. Not Lean: nothing here was checked by Lean.

    python -m storage.synthetic OUT --repos 5 --theorems 400
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from .tactic_text import NO_GOALS


def synthetic_commit(name: str, seed: int) -> str:
    return hashlib.sha1(f"{name}:{seed}".encode()).hexdigest()


def _premise(name: str, i: int, j: int) -> dict:
    line = 3 + 4 * j
    return {
        "full_name": f"{name.capitalize()}.f{i}_lemma{j}",
        "code": f"theorem f{i}_lemma{j} (n : Nat) : n + {j} = {j} + n := by omega",
        "start": [line, 1],
        "end": [line + 1, 20],
        "kind": "theorem",
    }


def _tactic(p: dict, def_path: str, k: int, t: int, n_tac: int) -> dict:
    """Tactic `t` of theorem `k`, rewriting with premise `p`; the last one closes the goal (and
    every 37th theorem's last tactic is `sorry`)."""
    goal = f"n m : Nat\nh : n ≤ m + {k}\n⊢ n + {t} ≤ m + {k + t}"
    tac = "sorry" if (k % 37 == 0 and t == n_tac - 1) else f"rw [{p['full_name']}]"
    annotation = {"full_name": p["full_name"], "def_path": def_path, "def_pos": p["start"], "def_end_pos": p["end"]}
    return {
        "tactic": tac,
        "annotated_tactic": [f"rw [<a>{p['full_name']}</a>]", [annotation]],
        "state_before": goal,
        "state_after": NO_GOALS if t == n_tac - 1 else f"n m : Nat\nh : n ≤ m + {k}\n⊢ n + {t + 1} ≤ m + {k + t + 1}",
    }


def synthetic_records(
    name: str,
    num_theorems: int,
    tactics_per_theorem: int = 4,
    seed: int = 0,
    num_files: int = 8,
    url: str | None = None,
    commit: str | None = None,
):
    """Return (theorem records, corpus lines) of one synthetic repository."""
    rng = random.Random(f"{name}:{seed}")
    url = url or f"https://dojoflow.invalid/synthetic/{name}"
    commit = commit or synthetic_commit(name, seed)
    files = [f"{name.capitalize()}/File{i}.lean" for i in range(num_files)]
    corpus, premises_by_file = [], {}
    for i, path in enumerate(files):
        premises_by_file[path] = [_premise(name, i, j) for j in range(6)]
        corpus.append({"path": path, "imports": files[max(0, i - 2) : i], "premises": premises_by_file[path]})
    theorems = []
    for k in range(num_theorems):
        path = files[k % num_files]
        i = files.index(path)
        accessible = [p for f in files[max(0, i - 2) : i + 1] for p in premises_by_file[f]]
        n_tac = max(1, tactics_per_theorem + rng.randint(-1, 1)) if rng.random() > 0.05 else 0
        tactics = []
        for t in range(n_tac):
            p = rng.choice(accessible)
            def_path = next(f for f, ps in premises_by_file.items() if p in ps)
            tactics.append(_tactic(p, def_path, k, t, n_tac))
        line = 40 + 5 * k
        theorems.append(
            {
                "url": url,
                "commit": commit,
                "file_path": path,
                "full_name": f"{name.capitalize()}.thm{k}",
                "theorem_statement": f"theorem thm{k} (n m : Nat) (h : n ≤ m + {k}) : n ≤ m + {k}",
                "start": [line, 1],
                "end": [line + n_tac + 1, 10],
                "traced_tactics": tactics,
            }
        )
    return theorems, corpus, url, commit


def write_synthetic_export(
    out: Path, name: str, num_theorems: int, tactics_per_theorem: int = 4, seed: int = 0, extra_repos: list[tuple] = ()
) -> Path:
    """Write one export; `extra_repos` are (theorems, corpus) of dependencies to include."""
    out = Path(out)
    theorems, corpus, url, commit = synthetic_records(name, num_theorems, tactics_per_theorem, seed)
    for dep_theorems, dep_corpus in extra_repos:
        theorems = dep_theorems + theorems
        corpus = dep_corpus + corpus
    rng = random.Random(seed)
    order = list(range(len(theorems)))
    rng.shuffle(order)
    n_val = n_test = max(1, len(theorems) // 10)
    split_of = {}
    for rank, i in enumerate(order):
        split_of[i] = "val" if rank < n_val else "test" if rank < n_val + n_test else "train"
    for kind in ("random", "novel_premises"):
        (out / kind).mkdir(parents=True, exist_ok=True)
        for split in ("train", "val", "test"):
            recs = [
                t for i, t in enumerate(theorems) if split_of[(i + (kind == "novel_premises")) % len(theorems)] == split
            ]
            (out / kind / f"{split}.json").write_text(json.dumps(recs, ensure_ascii=False))
    with open(out / "corpus.jsonl", "w") as f:
        for line in corpus:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")
    with open(out / "traced_files.jsonl", "w") as f:
        for line in corpus:
            f.write(json.dumps({"traced_file_path": line["path"]}) + "\n")
    (out / "metadata.json").write_text(
        json.dumps(
            {
                "creation_time": "2026-01-01T00:00:00",
                "from_repo": {"url": url, "commit": commit},
                "leandojo_version": "4.20.0",
            }
        )
    )
    return out


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--repos", type=int, default=3)
    ap.add_argument("--theorems", type=int, default=100)
    ap.add_argument("--tactics", type=int, default=4)
    a = ap.parse_args()
    for r in range(a.repos):
        write_synthetic_export(a.out / f"repo{r}", f"repo{r}", a.theorems, a.tactics, seed=r)
