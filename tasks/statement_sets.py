"""The pipeline's `statements:` section: statement sets imported into the store when a run starts
(storage/statement_sets/, docs/statement-sets.md). A set marked `benchmark: true` is also a benchmark
of the repositories' snapshots: its fingerprint joins the snapshot settings' `benchmarks`, so a
repository theorem stating one of its statements (or a near-copy) never trains.

    statements:
      - path: examples/statements/minif2f-mini.jsonl
        benchmark: true
      - path: storage/sample/statements/tiny-pset.jsonl
"""

from __future__ import annotations

from storage.statement_sets import set_meta
from storage.statement_sets.reader import StatementSetConfig, import_set


def import_statement_sets(store, configs: list[StatementSetConfig], snapshot_settings, split_settings=None):
    """(snapshot settings naming the benchmark sets' fingerprints, a summary row per set). The file
    named in the config is the truth: other content under a stored name replaces it."""
    rows = [import_set(store, c, replace=True, split_settings=split_settings) for c in configs]
    fps = [set_meta(store, r["set"])["benchmark_fingerprint"] for r in rows if r["benchmark"]]
    if fps:
        merged = tuple(dict.fromkeys((*snapshot_settings.benchmarks, *fps)))
        snapshot_settings = snapshot_settings.model_copy(update={"benchmarks": merged})
    return snapshot_settings, rows


def _spec(set_name: str, row: dict):
    from storage.lean_text import LeanTextError, declared_name
    from tasks.lean.backend import TheoremSpec

    statement = row["statement"].rstrip().removesuffix(":=").rstrip()
    try:  # the constant the statement declares (a row's name may be a uuid or a problem id)
        name = declared_name(statement) or row["name"]
    except LeanTextError:
        name = row["name"]  # the backend's own check names what is wrong
    return TheoremSpec(f"statements:{set_name}", "", "", "", name, statement)


def _tactics(proof: str) -> str:
    """A claimed proof `by TACTICS` as the tactic block the backends check (`:= by` is theirs)."""
    text = proof.strip()
    return text[2:].strip("\n").lstrip() if text.startswith("by") and text[2:3] in ("", " ", "\n") else text


def verify_claimed(store, set_name: str, backend, toolchain: str | None, verdict_level: str = "elaborator-checked"):
    """Check the set's claimed proofs with `backend` (a whole-proof Lean backend opened with the set's
    header) and store those the verdict accepts (tasks/lean/verdict.py). Refuses, in one line and
    before any check, a set written for another Lean than `toolchain`, and a set whose statements do
    not share one header (one header per backend). {"checked", "verified", "rejected": [(name, why)]}."""
    from storage.errors import InputError
    from storage.statement_sets import check_toolchain, claimed_proofs, record_verified_proofs
    from tasks.lean.verdict import judge

    check_toolchain(store, set_name, toolchain)
    rows = claimed_proofs(store, [set_name])
    headers = {r["header"] for r in rows}
    if len(headers) > 1:
        raise InputError(
            f"statement set {set_name}",
            f"has {len(headers)} different headers among its claimed proofs",
            "check it one header at a time (import the rows of each header as their own set)",
        )
    items = [(_spec(set_name, r), _tactics(r["claimed_proof"])) for r in rows]
    checks = (
        backend.check_proofs(items) if hasattr(backend, "check_proofs") else [backend.check_proof(*i) for i in items]
    )
    accepted, rejected = [], []
    for r, (_, tactics), check in zip(rows, items, checks):
        if check.error is None and judge(check, tactics).proved:
            accepted.append(
                {
                    "statement_id": r["statement_id"],
                    "toolchain": toolchain or "not recorded",
                    "proof": r["claimed_proof"],
                    "checker": check.checker,
                    "verdict": "proved",
                    "verdict_level": verdict_level,
                    "origin": "claimed",
                    "set_name": set_name,
                    "name": r["name"],
                }
            )
        else:
            why = check.error or next((m for m in check.messages if m), "not proved")
            rejected.append((r["name"], " ".join(str(why).split())[:200]))
    record_verified_proofs(store, accepted)
    return {"checked": len(rows), "verified": len(accepted), "rejected": rejected}
