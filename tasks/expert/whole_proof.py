"""Whole-proof expert iteration (`expert_iteration.mode: whole_proof`, docs/whole-proof.md): the
current whole-proof checkpoint samples `samples` proofs per statement of the pool, Lean checks each,
at most `keep` distinct verified proofs per statement are kept (shortest first), a statement leaves
the pool once it holds `stop_after` of them, and `sft_proof` trains on every verified whole proof.

- `select`: the pool of round (step, round): repositories' train theorems (`select_pool`'s rules:
  never val or test; `sorry` theorems when `pool.include_sorry`) and statement sets' train statements
  (storage/statement_sets: never a benchmark or held-out one), less those holding `stop_after` proofs
  kept before (step, round), so a rerun of a round selects the same statements. A statement-set
  statement is tried as stated by a kimina backend with a `header`, else through a repository theorem
  with the same statement fingerprint (its file and position, as for benchmarks,
  tasks/proving/benchmarks.py), else it is untried, with the reason.
- `sample_batch`: one batch: `samples` proofs per statement (one generate call for the batch), each
  distinct one checked by the backend and judged by the verdict rule (tasks/lean/verdict.py); the
  guard keeps forbidden constructs from Lean; `timeout_s` bounds each statement's checking.
- `kept_rows`: what `storage/whole_proofs.py` stores: per statement, the shortest verified proofs not
  kept before, up to `keep` in all; none from a lower-bound backend (replay), none outside train.
- `training_rows`: the round's whole proofs (kept ones up to this round, statement sets' verified
  proofs, found proofs of train theorems), for storage/proof_snapshot.py.

    python -c "help('tasks.expert.whole_proof')"
"""

from __future__ import annotations

import time
from pathlib import Path

from storage.ids import proof_id, unit_interval
from storage.snapshot_ref import SnapshotRef
from storage.whole_proofs import read_whole_proofs
from tasks.lean.closing import close_quickly
from tasks.metric_registry import register_metric
from tasks.proving.records import Pool, SampleRecord, TheoremToTry, Untried
from tasks.run_records import MetricRow

from .pool import PoolRequest, select_pool, statement_hash, toolchain_of  # noqa: F401 (statement_hash: callers' one rule)

# The round figures whole-proof mode adds to tactic mode's (tasks/expert/rounds.py): bookkeeping.
register_metric("proofs_kept", direction=None, kind="count", unit="proofs")
register_metric("samples_verified", direction=None, kind="count", unit="samples")

STATEMENTS_PREFIX = "statements:"  # the repo_id of a statement-set statement's records: `statements:<set>`


def _counts_before(store, step: int, round: int) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for r in read_whole_proofs(store):
        if (r["step"], r["round"]) < (step, round):
            out[(r["key"], r["toolchain"])] = out.get((r["key"], r["toolchain"]), 0) + 1
    return out


def _statement_records(store, sets: list[str], search, done: dict, stop_after: int) -> tuple[list, list]:
    """(records, untried) of the sets' train statements without `stop_after` kept proofs."""
    from storage.contamination import fingerprint
    from storage.lean_text import declared_name
    from storage.statement_sets import training_statements
    from tasks.lean.backend import TheoremSpec
    from tasks.lean.registry import of
    from tasks.proving.benchmarks import store_matches
    from tasks.proving.evaluate import initial_goals

    rows = training_statements(store, sets)
    as_stated = bool(of(search.backend).fixed_header(search.backend))
    repo_ids = [r["repo_id"] for r in store.repositories()]
    matches = {} if as_stated else store_matches(store, repo_ids)
    goals = initial_goals(store, repo_ids) if matches else {}
    records, untried = [], []
    for r in rows:
        toolchain = r.get("lean_version") or f"unknown toolchain of statement set {r['set']}"
        if done.get((r["statement_id"], toolchain), 0) >= stop_after:
            continue
        statement = r["statement"].rstrip().removesuffix(":=").rstrip()
        base = {
            "kind": "statement", "key": r["statement_id"], "repo_id": f"{STATEMENTS_PREFIX}{r['set']}",
            "theorem_id": r["statement_id"], "file_path": "", "full_name": r["name"], "split": "train",
            "header": r["header"], "statement": statement, "informal": r.get("informal"), "toolchain": toolchain,
            "url": "", "set": r["set"],
        }  # fmt: skip
        if as_stated:
            spec = TheoremSpec(base["repo_id"], "", "", "", declared_name(statement) or r["name"], statement)
            records.append(TheoremToTry(**base, goals="", via=None, spec=spec))
        elif fingerprint(statement) in matches:
            s = matches[fingerprint(statement)]
            g = goals.get((s.repo_id, s.file_path, s.full_name), "")
            records.append(TheoremToTry(**base, goals=g, via=f"{s.repo_id}:{s.full_name}", spec=s))
        else:
            why = f"the {search.backend.kind} backend cannot check it as stated (kimina with a header can)"
            untried.append(Untried(**{k: base[k] for k in ("repo_id", "theorem_id", "full_name", "split")}, reason=why))
    return records, untried


def select(store, request: PoolRequest) -> Pool:
    """The statements to sample for, how many left the pool (`proved`), and the untried ones."""
    ei, search, repo_ids = request.settings, request.search, request.repo_ids
    wp = ei.whole_proof
    done = _counts_before(store, request.step, request.round)
    records, untried, proved = [], [], sum(1 for n in done.values() if n >= wp.stop_after)
    if wp.repositories and repo_ids:
        stopped = {key for key, n in done.items() if n >= wp.stop_after}
        chosen = select_pool(store, repo_ids, request.split_kind, search, ei.pool.include_sorry, None, stopped)
        records += [r.but(kind="repo", key=r.theorem_id, header="", informal=None) for r in chosen.theorems]
        untried += chosen.untried
    if wp.statement_sets:
        more, missing = _statement_records(store, wp.statement_sets, search, done, wp.stop_after)
        records, untried = records + more, untried + missing
    if wp.max_statements is not None:
        records = sorted(records, key=lambda r: unit_interval("whole-proof-pool", r.key))[: wp.max_statements]
    records.sort(key=lambda r: (r.kind, r.repo_id, r.full_name))
    return Pool(theorems=records, proved=proved, untried=untried)


def check_toolchains(store, ei) -> None:
    """Refuse, in one line, a statement set of the whole-proof pool written for another Lean than the
    backend's (`whole_proof.lean_version`), as `dojoflow verify-statements` does (`check_toolchain`); the
    curriculum calls it once the sets are imported, before any training. A version unknown on either
    side passes (storage/statement_sets/identity.py `same_lean`)."""
    from storage.errors import InputError
    from storage.statement_sets import set_meta
    from storage.statement_sets.identity import same_lean

    if ei is None or ei.mode != "whole_proof":
        return
    backend = ei.whole_proof.lean_version
    for name in ei.whole_proof.statement_sets:
        written_for = set_meta(store, name).get("lean_version")
        if not same_lean(written_for, backend):
            raise InputError(
                "expert_iteration.whole_proof.lean_version",
                f"is {backend}, but statement set {name} was written for Lean {written_for}",
                f"search with a backend at Lean {written_for} and set lean_version to it, or take {name} out of "
                "expert_iteration.whole_proof.statement_sets",
            )


def sample_batch(
    store, search, checkpoint_dir: str | None, theorems: list[TheoremToTry], samples: int, cache: Path
) -> list[SampleRecord]:
    """Sample and check (see the module doc); one record per statement with its `verified` proofs."""
    from tasks.generate.base import TacticQuery
    from tasks.lean.verdict import judge
    from tasks.proving.evaluate import open_search_tools, spec_of

    theorems = TheoremToTry.all(theorems)
    specs = [spec_of(t) for t in theorems]
    repos = sorted({s.repo_id for s in specs if store.has_repository(s.repo_id)})
    backend, generator = open_search_tools(store, search, checkpoint_dir, repos, cache)
    try:
        generator.reseed(search.seed)
        queries = [
            TacticQuery(goals=t.goals or s.statement, theorem=_with_prompt_fields(s, t))
            for s, t in zip(specs, theorems)
        ]
        candidates = generator.generate_proofs(queries, samples)
        made_by = {
            "generator": generator.name,
            "adapter": (getattr(generator, "adapter_status", None) or [None])[0],  # an endpoint's, in words
        }
        return [_check(t, s, c, backend, search, judge).but(**made_by) for t, s, c in zip(theorems, specs, candidates)]
    finally:
        generator.close()
        close_quickly(backend)  # tasks/lean/closing.py


def _with_prompt_fields(spec, record: TheoremToTry):
    """The spec with the statement set's header and informal statement beside it (the prompt's parts)."""
    from types import SimpleNamespace

    if not record.header and not record.informal:
        return spec
    fields = {k: getattr(spec, k) for k in spec.__dataclass_fields__}
    return SimpleNamespace(**fields, header=record.header, informal=record.informal)


def _check(record: TheoremToTry, spec, candidates, backend, search, judge) -> SampleRecord:
    from tasks.search.whole_proof import check_in_time

    started, verified, axioms, rejected, errors, checked = time.perf_counter(), [], {}, 0, [], 0
    for c in check_in_time(candidates, spec, backend, search.timeout_s, started):
        checked, proof = checked + 1, c.proof
        if c.forbidden is not None:
            rejected += 1
            continue
        if c.error is not None:
            errors.append(c.error)
            continue
        verdict = judge(c.check, proof, tuple(search.backend.allowed_axioms))
        if verdict.proved:
            verified.append(proof)
            axioms[proof] = list(verdict.axioms)
        elif verdict.status == "error":
            errors.append(verdict.reason)
        else:
            rejected += 1
    return SampleRecord(
        **record.model_dump(),
        checker=backend.name,
        sampled=len(candidates),
        checked=checked,
        verified=verified,
        axioms=axioms,
        rejected=rejected,
        errors=len(errors),
        error=errors[0] if errors else None,
        seconds=round(time.perf_counter() - started, 4),
    )


def kept_rows(store, records: list[SampleRecord], *, keep: int, lower_bound: bool, rule_version: str, run_id: str,
              step: int, round: int, checkpoint_id: str) -> list[dict]:  # fmt: skip
    """Rows for storage/whole_proofs.py: per statement the shortest new verified proofs, up to `keep` in all
    (counting those kept before (step, round), so a rerun of the round keeps the same ones)."""
    if lower_bound:
        return []
    stored: dict[tuple[str, str], set[str]] = {}
    for r in read_whole_proofs(store, [rec.key for rec in records if rec.verified]):
        if (r["step"], r["round"]) < (step, round):
            stored.setdefault((r["key"], r["toolchain"]), set()).add(r["proof_id"])
    rows = []
    for rec in records:
        if rec.split != "train" or not rec.verified:
            continue
        have = stored.get((rec.key, rec.toolchain), set())
        new, ids = [], set(have)
        for proof in sorted(rec.verified, key=lambda p: (len(p), p)):
            if proof_id(proof) not in ids:
                ids.add(proof_id(proof))
                new.append(proof)
        for proof in new[: max(0, keep - len(have))]:
            rows.append(
                {
                    **rec.model_dump(include={"key", "toolchain", "kind", "repo_id", "theorem_id", "full_name"}),
                    **rec.model_dump(include={"split", "header", "statement", "informal"}),
                    "proof": proof,
                    "checker": rec.checker,
                    "rule_version": rule_version,
                    "verdict": "proved",
                    "axioms": list(rec.axioms.get(proof, ())),
                    "run_id": run_id,
                    "step": step,
                    "round": round,
                    "checkpoint_id": checkpoint_id,
                }  # fmt: skip
            )
    return rows


def training_rows(store, snapshot, split_kind: str, sets: list[str], step: int, round: int) -> tuple[list, dict]:
    """(the round's whole-proof rows for storage/proof_snapshot.py, counts by origin): every verified whole
    proof a train statement has up to (step, round): kept ones, statement sets' verified proofs, and
    found proofs of the snapshot's train theorems. Sorted, so the same proofs give the same snapshot."""
    from storage.found_proofs import NOT_A_VERIFIER, read_found
    from storage.statement_sets import training_statements, verified_proofs
    from tasks.sft_proof.traced import tactic_block

    train = set(snapshot.theorems(split_kind, "train").column("theorem_id").to_pylist())
    allowed = {r["statement_id"] for r in training_statements(store, sets)} if sets else set()
    rows = []
    for r in read_whole_proofs(store):
        if (r["step"], r["round"]) > (step, round) or r["verdict"] != "proved" or r["checker"] in NOT_A_VERIFIER:
            continue
        if (r["kind"] == "repo" and r["key"] in train) or (r["kind"] == "statement" and r["key"] in allowed):
            rows.append({**{k: r[k] for k in ("kind", "key", "repo_id", "theorem_id", "full_name")},
                         **{k: r[k] for k in ("header", "statement", "informal", "proof")}, "origin": "whole_proof"})  # fmt: skip
    for p in verified_proofs(store, sets) if sets else []:
        proof = tactic_block(p["proof"])
        if proof:
            rows.append({"kind": "statement", "key": p["statement_id"], "repo_id": p["set"], "theorem_id": None,
                         "full_name": p["name"], "header": p["header"], "statement": p["statement"],
                         "informal": p["informal"], "proof": proof, "origin": "statement_set"})  # fmt: skip
    for f in read_found(store, list(snapshot.repo_ids)):
        if f["theorem_id"] in train and f["verdict"] == "proved" and f["checker"] not in NOT_A_VERIFIER:
            rows.append({"kind": "repo", "key": f["theorem_id"], "repo_id": f["repo_id"], "theorem_id": f["theorem_id"],
                         "full_name": f["full_name"], "header": "", "statement": _statement_of(store, f),
                         "informal": None, "proof": f["proof"], "origin": "found"})  # fmt: skip
    rows = [r for r in rows if r["statement"]]
    unique = {(r["kind"], r["key"], " ".join(r["proof"].split())): r for r in rows}
    rows = [unique[k] for k in sorted(unique)]
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["origin"]] = counts.get(r["origin"], 0) + 1
    return rows, counts


def _statement_of(store, found: dict) -> str:
    from storage.errors import InputError
    from tasks.lean.theorems import load_theorems

    try:
        specs = load_theorems(store, [found["repo_id"]], full_names=[found["full_name"]], projects={})
    except InputError:
        return ""
    return specs[0].statement if specs else ""


# -- the plain functions behind the Prefect tasks (tasks/prefect_tasks/expert.py) ---------------------


def store_kept(
    store, records: list[SampleRecord], ei, search_settings, run_id: str, step: int, round: int, ckpt: str
) -> int:
    """Keep the round's verified proofs (`kept_rows`); statement-set ones also go to the set's verified
    proofs (storage/statement_sets), with origin `expert_iteration`. How many the round kept (the same
    number when the round runs again: rows kept before (step, round) decide it, not what is stored)."""
    from storage.statement_sets import record_verified_proofs
    from storage.whole_proofs import record_whole_proofs
    from tasks.lean.registry import get as backend_def
    from tasks.ledger import VERIFIER_RULE_VERSION

    records = SampleRecord.all(records)
    rows = kept_rows(
        store, records, keep=ei.whole_proof.keep, lower_bound=backend_def(search_settings.backend.kind).lower_bound,
        rule_version=str(VERIFIER_RULE_VERSION), run_id=run_id, step=step, round=round, checkpoint_id=ckpt,
    )  # fmt: skip
    record_whole_proofs(store, rows)  # a rerun of the round stores nothing new, and keeps the same rows
    sets = {r.key: r.set for r in records if r.kind == "statement"}
    mirrored = [
        {
            "statement_id": r["key"],
            "toolchain": r["toolchain"],
            "set_name": sets[r["key"]],
            "name": r["full_name"],
            "proof": "by\n" + "\n".join("  " + line for line in r["proof"].splitlines()),
            "checker": r["checker"],
            "verdict": "proved",
            "rule_version": r["rule_version"],
            "origin": "expert_iteration",
            "checkpoint_id": ckpt,
            "run_id": run_id,
            "round": round,
        }  # fmt: skip
        for r in rows
        if r["kind"] == "statement"
    ]
    record_verified_proofs(store, mirrored)
    return len(rows)


def round_data(
    store, snapshot, split_kind: str, sets: list[str], step: int, round: int
) -> tuple[SnapshotRef, dict[str, int]]:
    """(the round's training snapshot, counts): the step's snapshot plus every verified whole proof."""
    from storage.proof_snapshot import with_extra_train_proofs

    rows, counts = training_rows(store, snapshot, split_kind, sets, step, round)
    ref = with_extra_train_proofs(store, snapshot, split_kind, rows, {"by_origin": counts})
    kept = [r for r in read_whole_proofs(store) if (r["step"], r["round"]) <= (step, round)]
    counts = {**counts, "proofs": len(rows), "proved_so_far": len({(r["key"], r["toolchain"]) for r in kept})}
    return ref, counts


def metrics(
    records: list[SampleRecord], counts: dict[str, int], new: int, loss, round: int, repo_id: str, split_kind: str,
    ckpt: str,
) -> list[MetricRow]:  # fmt: skip
    """Round metrics (trainer `expert_iteration`): as tactic mode's, with `proofs_kept` and `samples_verified`."""
    from .rounds import metric_rows

    figures = {
        "round": float(round),
        "attempted": float(len(records)),
        "newly_proved": float(sum(1 for r in records if r.verified)),
        "proved_so_far": float(counts.get("proved_so_far", 0)),
        "proofs_kept": float(new),
        "samples_verified": float(sum(len(r.verified) for r in records)),
        "found_pairs": float(counts.get("proofs", 0)),  # whole proofs in the round's training data
    }
    figures["own_share"] = figures["newly_proved"] / figures["proved_so_far"] if figures["proved_so_far"] else 0.0
    if loss is not None:
        figures["train_loss"] = float(loss)
    return metric_rows(figures, repo_id, split_kind, ckpt)
