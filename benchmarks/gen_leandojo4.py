"""A LeanDojo-Benchmark-4-sized export, generated: one repository (mathlib4's url) with
about 122,000 theorems, 260,000 traced tactics and 180,000 premises by default, every
text length (statement, tactic, state before and after, premise code) and count (tactics
per theorem, premises per tactic) drawn from the held-out sample's own distribution
(storage/sample/leandojo/*: what `storage/sample/generate.py` traced). The records are
valid input to `dojoflow import` (names, statements and tactics pass its checks) and are
written one at a time, so generating needs little memory.

    .venv/bin/python benchmarks/gen_leandojo4.py OUT [--theorems 122000] [--premises 180000]
        [--files 4500] [--text-scale 1] [--seed 0]

`--text-scale 4` multiplies every drawn text length (Mathlib's goals are longer than the
sample's: a check of how the figures grow with the text). Used by bench_leandojo4.py and
by tests/storage/test_leandojo_stream.py (at a small size).
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import random
from functools import lru_cache
from pathlib import Path

URL = "https://github.com/leanprover-community/mathlib4"
COMMIT = "29dcec074de168ac2bf835a77ef68bbe069194c5"
_WORDS = ("x", "y", "+", "*", "=", "≤", "Nat.succ", "a", "b", "∧", "∨", "¬", "→", "0", "1", "List.length", "f", "g")


@lru_cache(maxsize=1)
def sample_distribution() -> dict[str, list[int]]:
    """Lengths and counts measured on the held-out sample's exports (storage/sample)."""
    root = Path(__file__).resolve().parents[1] / "storage" / "sample" / "leandojo"
    out: dict[str, list[int]] = {k: [] for k in ("tactics", "statement", "tactic", "before", "after", "annotations")}
    out["code"] = []
    for path in glob.glob(str(root / "*" / "random" / "*.json")):
        for rec in json.loads(Path(path).read_text()):
            out["tactics"].append(len(rec["traced_tactics"]))
            out["statement"].append(len(rec["theorem_statement"] or ""))
            for t in rec["traced_tactics"]:
                out["tactic"].append(len(t["tactic"]))
                out["before"].append(len(t["state_before"]))
                out["after"].append(len(t["state_after"]))
                out["annotations"].append(len(t["annotated_tactic"][1]))
    for path in glob.glob(str(root / "*" / "corpus.jsonl")):
        for line in Path(path).read_text().splitlines():
            out["code"] += [len(p.get("code") or "") for p in json.loads(line)["premises"]]
    return out


def _filler(rng: random.Random, length: int) -> str:
    words, n = [], 0
    while n < length:
        w = rng.choice(_WORDS)
        words.append(w)
        n += len(w) + 1
    return " ".join(words)


def _split(k: int, salt: str) -> str:
    u = int.from_bytes(hashlib.blake2b(f"{salt}:{k}".encode(), digest_size=8).digest(), "big") / 2**64
    return "val" if u < 0.1 else "test" if u < 0.2 else "train"


class _Repo:
    """The files and premises of the generated repository."""

    def __init__(self, files: int, premises: int, scale: float, seed: int):
        self.paths = [f"Mathlib/Area{i // 100}/File{i}.lean" for i in range(files)]
        self.premises: list[list[str]] = [[] for _ in range(files)]
        for j in range(premises):
            self.premises[j % files].append(f"Mathlib.F{j % files}.p{j}")
        self.scale, self.seed = scale, seed
        self.dist = sample_distribution()

    def imports(self, i: int) -> list[int]:
        return [j for j in (i - 1, i - 2, i // 2) if 0 <= j < i]

    def draw(self, rng: random.Random, what: str) -> int:
        value = rng.choice(self.dist[what])
        return int(value * self.scale) if what not in ("tactics", "annotations") else value

    def corpus_line(self, i: int) -> dict:
        rng = random.Random(f"{self.seed}:file:{i}")
        premises = []
        for j, name in enumerate(self.premises[i]):
            short = name.rsplit(".", 1)[1]
            code = f"theorem {short} : " + _filler(rng, self.draw(rng, "code"))
            line = 3 + 4 * j
            premises.append(
                {"full_name": name, "code": code, "start": [line, 1], "end": [line + 2, 20], "kind": "theorem"}
            )
        return {"path": self.paths[i], "imports": [self.paths[j] for j in self.imports(i)], "premises": premises}

    def theorem(self, k: int) -> dict:
        rng = random.Random(f"{self.seed}:thm:{k}")
        i = k % len(self.paths)
        reachable = [p for f in [i, *self.imports(i)] for p in self.premises[f]]
        tactics = []
        for _ in range(self.draw(rng, "tactics")):
            named = [rng.choice(reachable) for _ in range(self.draw(rng, "annotations"))] if reachable else []
            text = "simp [" + ", ".join(named) + "] " + _filler(rng, max(0, self.draw(rng, "tactic") - 8))
            annotations = []
            for name in named:
                f = int(name.split(".")[1][1:])
                line = 3 + 4 * self.premises[f].index(name)
                annotations.append(
                    {"full_name": name, "def_path": self.paths[f], "def_pos": [line, 1], "def_end_pos": [line + 2, 20]}
                )
            tactics.append(
                {
                    "tactic": text,
                    "annotated_tactic": [text.replace("simp [", "simp [<a>", 1) if named else text, annotations],
                    "state_before": "x y : Nat\n⊢ " + _filler(rng, self.draw(rng, "before")),
                    "state_after": "x y : Nat\n⊢ " + _filler(rng, self.draw(rng, "after")),
                }
            )
        line = 10 + 7 * (k // len(self.paths))
        return {
            "url": URL,
            "commit": COMMIT,
            "file_path": self.paths[i],
            "full_name": f"Mathlib.F{i}.thm{k}",
            "theorem_statement": f"theorem thm{k} (x y : Nat) : " + _filler(rng, self.draw(rng, "statement")),
            "start": [line, 1],
            "end": [line + len(tactics) + 1, 10],
            "traced_tactics": tactics,
        }


def generate(
    out: Path,
    theorems: int = 122_000,
    premises: int = 180_000,
    files: int = 4_500,
    text_scale: float = 1.0,
    seed: int = 0,
) -> Path:
    """Write the export into `out` (created); returns it."""
    out = Path(out)
    repo = _Repo(min(files, max(1, theorems)), premises, text_scale, seed)
    (out / "random").mkdir(parents=True)
    (out / "novel_premises").mkdir()
    handles = {
        (kind, s): open(out / kind / f"{s}.json", "w")
        for kind in ("random", "novel_premises")
        for s in ("train", "val", "test")
    }
    first = dict.fromkeys(handles, True)
    try:
        for h in handles.values():
            h.write("[")
        for k in range(theorems):
            text = json.dumps(repo.theorem(k))
            for kind in ("random", "novel_premises"):
                key = (kind, _split(k, f"{seed}:{kind}"))
                handles[key].write(text if first[key] else ", " + text)
                first[key] = False
        for h in handles.values():
            h.write("]")
    finally:
        for h in handles.values():
            h.close()
    with open(out / "corpus.jsonl", "w") as f:
        for i in range(len(repo.paths)):
            f.write(json.dumps(repo.corpus_line(i)) + "\n")
    (out / "traced_files.jsonl").write_text("".join(json.dumps({"traced_file_path": p}) + "\n" for p in repo.paths))
    metadata = {
        "creation_time": "2026-01-01T00:00:00",
        "from_repo": {"url": URL, "commit": COMMIT},
        "leandojo_version": "4.20.0",
    }
    (out / "metadata.json").write_text(json.dumps(metadata))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--theorems", type=int, default=122_000)
    ap.add_argument("--premises", type=int, default=180_000)
    ap.add_argument("--files", type=int, default=4_500)
    ap.add_argument("--text-scale", type=float, default=1.0)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    generate(a.out, a.theorems, a.premises, a.files, a.text_scale, a.seed)
    size = sum(p.stat().st_size for p in a.out.rglob("*") if p.is_file())
    print(f"wrote {a.out}: {a.theorems} theorems, {a.premises} premises, {size / 2**20:.0f} MiB")


if __name__ == "__main__":
    main()
