"""Curriculum order, LeanAgent's rule (docs/architecture.md, "Rules taken from LeanDojo and LeanAgent").

A theorem's difficulty is e^(number of traced tactics), compared in log space (e^n
overflows a float beyond 709 tactics); a theorem proved with `sorry` is infinitely hard. Finite difficulties are cut into easy / medium / hard
at the 33rd and 67th percentiles over all theorems considered together.
Repositories are ordered by their share of easy theorems, most first (LeanAgent
counts easy theorems; a share does not favour large repositories), then by
number of easy theorems, then by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from . import catalog


def log_difficulty(num_tactics: int, has_sorry: bool) -> float:
    """ln of the difficulty e^(num_tactics): the number of tactics itself. Kept in log space,
    since e^n overflows a float beyond 709 tactics, which real proofs exceed."""
    return math.inf if has_sorry else float(num_tactics)


def _log_percentile(sorted_logs: list[float], q: float) -> float:
    """ln of the q-th percentile of e^x over `sorted_logs`, interpolated linearly between
    closest ranks in difficulty space (numpy's default) without computing e^x."""
    if not sorted_logs:
        return math.nan
    pos = (len(sorted_logs) - 1) * q
    lo, hi = sorted_logs[math.floor(pos)], sorted_logs[math.ceil(pos)]
    f = pos - math.floor(pos)
    if f == 0 or lo == hi:
        return lo
    # ln(e^lo + (e^hi - e^lo) f) = hi + ln(f + (1 - f) e^(lo - hi))
    return hi + math.log(f + (1 - f) * math.exp(lo - hi))


@dataclass(frozen=True)
class RepoDifficulty:
    repo_id: str
    name: str
    theorems: int
    easy: int
    medium: int
    hard: int
    sorry: int

    @property
    def easy_share(self) -> float:
        return self.easy / self.theorems if self.theorems else 0.0


def repo_difficulties(theorems: list[dict]) -> list[RepoDifficulty]:
    """`theorems`: dicts with repo_id, name, num_tactics, has_sorry. Returns curriculum order."""
    finite = sorted(log_difficulty(t["num_tactics"], False) for t in theorems if not t["has_sorry"])
    p33, p67 = _log_percentile(finite, 1 / 3), _log_percentile(finite, 2 / 3)
    stats: dict[str, dict] = {}
    for t in theorems:
        s = stats.setdefault(
            t["repo_id"],
            {"name": t.get("name", t["repo_id"]), "theorems": 0, "easy": 0, "medium": 0, "hard": 0, "sorry": 0},
        )
        s["theorems"] += 1
        d = log_difficulty(t["num_tactics"], t["has_sorry"])
        if math.isinf(d):
            s["sorry"] += 1
        elif d <= p33:
            s["easy"] += 1
        elif d <= p67:
            s["medium"] += 1
        else:
            s["hard"] += 1
    out = [RepoDifficulty(repo_id=r, **s) for r, s in stats.items()]
    out.sort(key=lambda d: (-d.easy_share, -d.easy, d.name, d.repo_id))
    return out


def curriculum_order(store, repo_ids: list[str] | None = None) -> list[RepoDifficulty]:
    """Stored repositories (all, or `repo_ids`) in curriculum order."""
    ids = store.repo_ids() if repo_ids is None else list(repo_ids)
    names = {r: store.repository(r)["name"] for r in ids}
    table = store.read_table("theorems", ids, columns=["repo_id", "num_tactics", "has_sorry"])
    rows = [{**t, "name": names[t["repo_id"]]} for t in table.to_pylist()]
    return repo_difficulties(rows)


def curriculum_table(store) -> list[dict]:
    """Every repository in the store with its counts and difficulty, in curriculum order
    (what `dojoflow repos` prints)."""
    counts = {
        r["repo_id"]: r
        for r in catalog.query(
            store,
            """
        SELECT r.repo_id, r.url, r.commit,
          (SELECT count(*) FROM files f WHERE f.repo_id = r.repo_id) AS files,
          (SELECT count(*) FROM tactics t WHERE t.repo_id = r.repo_id) AS tactics,
          (SELECT count(*) FROM premises p WHERE p.repo_id = r.repo_id) AS premises
        FROM repositories r""",
        ).to_pylist()
    }
    rows = []
    for i, d in enumerate(curriculum_order(store), start=1):
        c = counts[d.repo_id]
        rows.append(
            {
                "#": i,
                "repo_id": d.repo_id,
                "name": d.name,
                "url": c["url"],
                "commit": c["commit"][:10],
                "files": c["files"],
                "theorems": d.theorems,
                "tactics": c["tactics"],
                "premises": c["premises"],
                "easy": d.easy,
                "medium": d.medium,
                "hard": d.hard,
                "sorry": d.sorry,
                "easy share": round(d.easy_share, 3),
            }
        )
    return rows
