"""Benchmark statements kept out of training: a statement fingerprint that survives
renaming and layout, token n-gram overlap (Kimina-Prover's decontamination uses 13-grams),
and the rule that decides which training theorems a snapshot excludes, and why.

- `normalise`: a declaration's statement without comments, without its keyword and name,
  with its bound variables renamed in order of appearance (x0, x1, ...) and no whitespace;
  `fingerprint` is a hash of it: `theorem foo (a b : Nat) : a + b = b + a` and
  `lemma bar (x y : Nat) :\n  x + y = y + x` have the same one.
- `ngrams`: hashes of the n-token windows of the normalised text (the whole text when it is
  shorter than n tokens).
- `contaminated`: the training theorems whose statement has a benchmark's fingerprint, or
  shares more than `max_overlap` of its n-grams with one benchmark statement; and with
  `cross_repository`, the copies of one statement held by several repositories beyond the
  first (a fork or vendored file would put it in train in one and test in another).
- A benchmark is stored content-addressed under `<store>/benchmarks/<fingerprint>.json`; a
  snapshot names the fingerprints and the settings, so changing either is a new snapshot.

>>> normalise("theorem foo (a b : Nat) : a + b = b + a") == normalise("lemma bar (x y : Nat) :\\n  x + y = y + x -- c")
True
"""

from __future__ import annotations

import re
from hashlib import blake2b

from pydantic import BaseModel, ConfigDict, Field

from . import atomic
from .errors import InputError
from .ids import stable_hash

_DECL = re.compile(
    r"^\s*(?:@\[[^\]]*\]\s*)*(?:(?:private|protected|noncomputable|nonrec)\s+)*"
    r"(?:theorem|lemma|example|def|abbrev|instance)\b\s*(?:[^\s(\[{:⦃]+)?"
)
_BINDER_GROUP = re.compile(r"[(\[{⦃]\s*([^:()\[\]{}⦃⦄]+?)\s*:")
_QUANTIFIED = re.compile(r"(?:∀|∃!?|fun|λ|Π|Σ)\s+([^,:=>→]+?)\s*(?:[,:]|=>|↦)")
_TOKEN = re.compile(r"[\w'.!?]+|[^\w\s()\[\]{}⦃⦄,]+|[()\[\]{}⦃⦄,]")


def statement_from_code(code: str) -> str | None:
    """The declaration of a corpus entry up to its `:=`, without doc comments and attributes."""
    text = re.sub(r"/--.*?-/", "", code, flags=re.S).strip()
    text = re.sub(r"^@\[[^\]]*\]\s*", "", text)
    head, sep, _ = text.partition(":=")
    return " ".join(head.split()) if sep else None


def _strip_comments(text: str) -> str:
    text = re.sub(r"/-.*?-/", " ", text, flags=re.S)
    return re.sub(r"--[^\n]*", " ", text)


def normalise(statement: str) -> str:
    """The statement with comments, its keyword and name, bound names and layout normalised."""
    text = _strip_comments(statement).rstrip().removesuffix(":=")  # `:=` then a comment or a newline: still the tail
    text = _DECL.sub("", text, count=1)
    names: list[str] = []
    for pattern in (_BINDER_GROUP, _QUANTIFIED):
        for group in pattern.findall(text):
            for name in group.split():
                if re.fullmatch(r"[^\W\d][\w'.]*", name) and name not in names:
                    names.append(name)
    renamed = {n: f"x{i}" for i, n in enumerate(names)}
    tokens = [renamed.get(t, t) for t in _TOKEN.findall(text)]
    return " ".join(tokens)


def fingerprint(statement: str) -> str:
    return stable_hash(normalise(statement), 16)


def ngrams(statement: str, n: int) -> set[int]:
    """Hashes of the n-token windows of the normalised statement."""
    tokens = normalise(statement).split()
    windows = [tokens] if len(tokens) < n else [tokens[i : i + n] for i in range(len(tokens) - n + 1)]
    return {int.from_bytes(blake2b(" ".join(w).encode(), digest_size=8).digest(), "big") for w in windows if w}


class ContaminationSettings(BaseModel):
    """When a training theorem counts as a copy of a benchmark's (or another repository's)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ngram: int = Field(13, ge=3, le=64, description="Tokens per n-gram (Kimina-Prover's pipeline uses 13).")
    max_overlap: float = Field(
        0.3,
        ge=0.0,
        lt=1.0,
        description="Exclude a training statement sharing more than this share of its n-grams with one benchmark "
        "statement (a fingerprint match always excludes). 0 would exclude on any shared n-gram, but Lean statements "
        "share binder preambles (`{α : Type} (xs ys : List α) :` is 13 tokens): on the sample, unrelated statements "
        "share 7 to 20% of their 13-grams with a benchmark's, near-copies 90% or more; 0.3 is the strict default.",
    )
    cross_repository: bool = Field(
        False,
        description="Keep one copy of a statement held by several repositories (forks, vendored files): the others "
        "leave the snapshot, so it cannot be in train in one and in test in another (the newest repository keeps "
        "it). Off by default: the copies leave every split, so an older repository's evaluation loses them at "
        "later steps and its forgetting figures change meaning; turn it on where repositories vendor each other.",
    )


def benchmark_fingerprint(statements: list[str]) -> str:
    """A benchmark's identity: the hash of its sorted statement fingerprints."""
    return stable_hash(sorted(fingerprint(s) for s in statements), 16)


def save_benchmark(store, name: str, theorems: list[dict]) -> str:
    """Store a benchmark's theorems ({name, statement}), content-addressed; its fingerprint."""
    fp = benchmark_fingerprint([t["statement"] for t in theorems])
    path = store.root / "benchmarks" / f"{fp}.json"
    if not path.exists():
        atomic.write_json(path, {"name": name, "fingerprint": fp, "theorems": theorems})
    return fp


def load_benchmark(store, fp: str) -> dict:
    path = store.root / "benchmarks" / f"{fp}.json"
    if not path.is_file():
        raise InputError(path, "is missing (a snapshot names a benchmark this store does not hold)", "run again")
    import json

    return json.loads(path.read_text())


def contaminated(training: list[dict], benchmarks: list[dict], settings: ContaminationSettings) -> list[dict]:
    """Rows of `training` (repo_id, theorem_id, full_name, statement; first holder first) to
    exclude, each with `reason`, `benchmark`, `matched` (the statement it copies) and `overlap`."""
    exact: dict[str, tuple[str, str]] = {}
    grams: dict[int, set[tuple[str, str]]] = {}
    sizes: dict[tuple[str, str], int] = {}
    for b in benchmarks:
        for t in b["theorems"]:
            key = (b["name"], t["name"])
            exact.setdefault(fingerprint(t["statement"]), key)
            for g in ngrams(t["statement"], settings.ngram):
                grams.setdefault(g, set()).add(key)
            sizes[key] = 1
    out, first_holder = [], {}
    for row in training:
        fp = fingerprint(row["statement"])
        hit = None
        if fp in exact:
            hit = (*exact[fp], 1.0, "same statement as benchmark")
        elif grams:
            mine = ngrams(row["statement"], settings.ngram)
            shared: dict[tuple[str, str], int] = {}
            for g in mine:
                for key in grams.get(g, ()):
                    shared[key] = shared.get(key, 0) + 1
            if shared:
                key, count = max(shared.items(), key=lambda kv: (kv[1], kv[0]))
                overlap = count / len(mine)
                if overlap > settings.max_overlap:
                    hit = (*key, round(overlap, 4), f"{settings.ngram}-gram overlap with benchmark")
        if hit is not None:
            bench, name, overlap, why = hit
            out.append(
                {**row, "benchmark": bench, "matched": name, "overlap": overlap, "reason": f"{why} {bench}: {name}"}
            )
            continue
        if settings.cross_repository:
            holder = first_holder.setdefault(fp, row)
            if holder["repo_id"] != row["repo_id"]:
                out.append(
                    {
                        **row,
                        "benchmark": None,
                        "matched": f"{holder['repo_id']}:{holder['full_name']}",
                        "overlap": 1.0,
                        "reason": f"same statement as {holder['repo_id']}: {holder['full_name']}",
                    }
                )
    return out


REPORT_FILE = "contamination.json"


def _statements(store, repo_ids: list[str]) -> dict[tuple[str, str], str]:
    """{(repo_id, theorem_id): statement} from the export's field, else the corpus entry."""
    theorems = store.read_table(
        "theorems", repo_ids, columns=["repo_id", "theorem_id", "full_name", "theorem_statement"]
    )
    rows = theorems.to_pylist()
    missing = {(r["repo_id"], r["full_name"]) for r in rows if not r["theorem_statement"]}
    codes = {}
    if missing:
        premises = store.read_table("premises", repo_ids, columns=["repo_id", "full_name", "code"]).to_pylist()
        codes = {
            (p["repo_id"], p["full_name"]): p["code"] for p in premises if (p["repo_id"], p["full_name"]) in missing
        }
    out = {}
    for r in rows:
        text = r["theorem_statement"] or statement_from_code(codes.get((r["repo_id"], r["full_name"])) or "")
        if text:
            out[(r["repo_id"], r["theorem_id"])] = text
    return out


def snapshot_exclusions(store, index_rows: list[dict], fingerprints: tuple[str, ...], settings: ContaminationSettings):
    """(rows of `index_rows` to exclude, each with `reason`; the contamination report).
    `index_rows`: the part indexes' rows of the snapshot's repositories, newest repository
    first, without those de-duplication already dropped."""
    benchmarks = [load_benchmark(store, fp) for fp in fingerprints]
    if not benchmarks and not settings.cross_repository:
        return [], None
    statements = _statements(store, sorted({r["repo_id"] for r in index_rows}))
    training = [
        {**r, "statement": statements[(r["repo_id"], r["theorem_id"])]}
        for r in index_rows
        if (r["repo_id"], r["theorem_id"]) in statements
    ]
    found = contaminated(training, benchmarks, settings)
    counts: dict[str, dict[str, int]] = {}
    for f in found:
        per = counts.setdefault(f["repo_id"], {})
        key = f["benchmark"] or "another repository"
        per[key] = per.get(key, 0) + 1
    report = {
        "settings": settings.model_dump(),
        "benchmarks": [
            {"name": b["name"], "fingerprint": b["fingerprint"], "statements": len(b["theorems"])} for b in benchmarks
        ],
        "checked": len(training),
        "without_statement": len(index_rows) - len(training),
        "counts": counts,
        "excluded": [
            {
                k: f[k]
                for k in (
                    "repo_id",
                    "theorem_id",
                    "file_path",
                    "full_name",
                    "benchmark",
                    "matched",
                    "overlap",
                    "reason",
                )
            }
            for f in found
        ],
    }
    return found, report


DUPLICATE_REASON = "same file path and name as a newer repository's"


def exclusions_with_reasons(store, indexes: list, columns: list[str], dropped, fingerprints, settings):
    """(the rows a snapshot excludes, with a `reason` column; the contamination report, or None
    when nothing was checked). `dropped`: de-duplication's rows (`columns`) or None; `indexes`:
    the part indexes to check, newest repository first (none: no check)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if dropped is not None:
        dropped = dropped.append_column("reason", pa.array([DUPLICATE_REASON] * len(dropped), pa.string()))
    if not indexes:
        return dropped, None
    gone = set() if dropped is None else set(zip(dropped["repo_id"].to_pylist(), dropped["theorem_id"].to_pylist()))
    rows = [
        r
        for path in indexes
        for r in pq.read_table(path, columns=columns).to_pylist()
        if (r["repo_id"], r["theorem_id"]) not in gone
    ]
    found, report = snapshot_exclusions(store, rows, tuple(fingerprints), settings)
    if found:
        extra = pa.Table.from_pylist([{**{c: f[c] for c in columns}, "reason": f["reason"]} for f in found])
        if dropped is not None:
            extra = extra.cast(dropped.schema)
        dropped = extra if dropped is None else pa.concat_tables([dropped, extra])
    return dropped, report
