"""Whole-proof SFT (tasks/sft_proof): traced proofs read back from LeanDojo's source spans (each one
replays through the sample's traced transitions), prompt-completion examples (chat and plain),
`training:` checks, a real LoRA training on the tiny local model whose checkpoint writes proofs from
statements, and its evaluation: replay-named pass@k with intervals beside the closing-tactics
baseline. No Lean runs: every `replay` figure says so in its name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from storage.errors import InputError
from storage.proof_snapshot import extra_proofs, with_extra_train_proofs
from storage.snapshot import build_snapshot
from tasks.lean.replay import ReplayBackend
from tasks.sft_proof.config import SFTProofSettings, preflight
from tasks.sft_proof.data import build_examples, user_prompt
from tasks.sft_proof.traced import _chain, proof_of_declaration, span_text, traced_whole_proofs
from tests.doubles.sample_store import sample_store

FAST = {
    "max_steps": 4,
    "per_device_train_batch_size": 4,
    "save_strategy": "no",
    "logging_steps": 1,
    "disable_tqdm": True,
}


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("sft_proof")
    store = sample_store(root / "home")
    repo = next(r["repo_id"] for r in store.repositories() if r["name"] == "NatBasics")
    return {"root": root, "store": store, "repo": repo, "snapshot": build_snapshot(store, [repo])}


def test_span_and_declaration_give_the_tactic_block():
    text = "namespace N\n\ntheorem t (n : Nat) : n + 0 = n := by\n  induction n with\n  | zero => rfl\n  | succ n ih => simp\n\nend N\n"
    decl = span_text(text, (3, 1), (6, 22))
    assert decl.startswith("theorem t") and decl.endswith("simp")
    assert proof_of_declaration(decl) == ("induction n with\n| zero => rfl\n| succ n ih => simp", "")
    assert proof_of_declaration("theorem t : (fun x => x := 1) = 1 := by rfl")[0] == "rfl"  # := inside brackets
    assert proof_of_declaration("theorem t : 1 = 1 := rfl") == ("exact rfl", "")
    assert proof_of_declaration("theorem t : P\n  | 0 => rfl")[0] is None  # equations: no top-level :=
    steps = [
        {"idx": 0, "state_before": "⊢ a", "tactic": "constructor", "state_after": "⊢ b\n\n⊢ c"},
        {"idx": 1, "state_before": "⊢ b", "tactic": "simp", "state_after": "no goals"},  # nested: not in the chain
        {"idx": 2, "state_before": "⊢ b\n\n⊢ c", "tactic": "all_goals simp", "state_after": "no goals"},
    ]
    assert _chain(steps) == "constructor\nall_goals simp"


def test_every_traced_proof_read_from_source_replays_through_the_traced_steps(env):
    """The proof text cut from each train theorem's source span is the proof LeanDojo traced: replay,
    which accepts only sequences of the traced tactics that close the goal, accepts every one."""
    from tasks.lean import load_theorems

    rows, counts = traced_whole_proofs(env["store"], env["snapshot"], "random")
    assert counts["traced_source"] == len(rows) > 20 and counts["skipped"] == 0
    specs = {s.full_name: s for s in load_theorems(env["store"], [env["repo"]])}
    tactic_proofs = {
        t["full_name"] for t in env["snapshot"].theorems("random", "train").to_pylist() if t["num_tactics"] > 0
    }
    backend = ReplayBackend(env["store"])
    checked = [r for r in rows if r["full_name"] in tactic_proofs]
    assert len(checked) > 20
    for r in checked:
        check = backend.check_proof(specs[r["full_name"]], r["proof"])
        assert check.accepted, (r["full_name"], r["proof"], check.messages)


def test_examples_carry_header_informal_and_statement_and_learn_the_proof_only():
    settings = SFTProofSettings()
    rows = [
        {
            "statement": "theorem a (n : Nat) : n = n :=",
            "header": "import Mathlib\nopen Nat",
            "informal": "n is n.",
            "proof": "rfl",
        },
        {"statement": "theorem a (n : Nat) : n = n", "header": "", "informal": None, "proof": "  rfl  "},  # same pair
        {"statement": "theorem b : False", "proof": "sorry"},
        {"statement": "theorem c : True", "proof": "x" * 5000},
    ]
    ex = build_examples(rows, settings)
    assert len(ex) == 1 and ex.skipped == {"sorry": 1, "empty": 0, "too_long": 1, "duplicate": 1}
    user = ex.prompts[0][1]["content"]
    assert user == "import Mathlib\nopen Nat\n\n/-- n is n. -/\ntheorem a (n : Nat) : n = n := by"
    assert ex.prompts[0][0] == {"role": "system", "content": settings.system_prompt}
    assert ex.completions[0] == [{"role": "assistant", "content": "rfl"}]
    bare = build_examples(rows[:1], SFTProofSettings(include_header=False, include_informal=False))
    assert bare.prompts[0][1]["content"] == "theorem a (n : Nat) : n = n := by"

    class Plain:  # a tokenizer without a chat template: plain text, the proof indented under `by`
        chat_template = None

    plain = build_examples([{**rows[0], "proof": "intro n\nrfl"}], settings, Plain())
    assert plain.prompts[0] == user + "\n" and plain.completions[0] == "  intro n\n  rfl"
    assert user_prompt("theorem t : 1 = 1 := by\n") == "theorem t : 1 = 1 := by"


def test_training_pass_through_is_checked_with_the_trainers_field_name():
    with pytest.raises(InputError) as e:
        preflight(SFTProofSettings(training={"num_train_epochs": 0}), "trainers.sft_proof")
    assert "trainers.sft_proof.training.num_train_epochs" in str(e.value)
    with pytest.raises(InputError) as e:
        preflight(SFTProofSettings(training={"no_such_arg": 1}), "trainers.sft_proof")
    assert "trainers.sft_proof.training.no_such_arg" in str(e.value)


def test_lora_training_on_traced_and_extra_proofs_then_replay_pass_at_k_beside_the_baseline(env):
    from tasks.generate import GeneratorSettings, open_generator
    from tasks.generate.base import TacticQuery
    from tasks.lean import load_theorems
    from tasks.sft_proof.evaluate import evaluate_sft_proof
    from tasks.sft_proof.train import train_sft_proof

    root, store, snapshot = env["root"], env["store"], env["snapshot"]
    spec = next(s for s in load_theorems(store, [env["repo"]]) if s.full_name == "NatBasics.add_comm'")
    extra = [{"kind": "repo", "key": "k", "repo_id": env["repo"], "theorem_id": "k", "full_name": spec.full_name,
              "header": "", "statement": spec.statement, "informal": None, "proof": "omega", "origin": "found"}]  # fmt: skip
    mixed = with_extra_train_proofs(store, snapshot, "random", extra, {})
    assert extra_proofs(mixed, "random")[0]["proof"] == "omega" and extra_proofs(snapshot, "random") == []
    assert with_extra_train_proofs(store, snapshot, "random", extra, {}).snapshot_id == mixed.snapshot_id
    settings = SFTProofSettings(
        lora={"r": 4, "alpha": 8, "target_modules": "all-linear"}, training=FAST,
        evaluation={"k": 2, "max_theorems": 2, "max_proof_tokens": 8},
    )  # fmt: skip
    figures = train_sft_proof(
        settings, mixed, "random", None, root / "out", root / "work", model_cache_dir=root / "models"
    )
    assert figures["mode"] == "lora" and figures["steps"] == 4 and figures["by_origin"]["found"] == 1
    assert figures["examples"] == figures["rows"] == figures["by_origin"]["traced_source"] + 1
    assert (root / "out" / "adapter_config.json").is_file()
    info = json.loads((root / "out" / "dojoflow_model.json").read_text())
    assert info["trainer"] == "sft_proof"
    # the checkpoint writes proofs from the statement, in its training prompt
    gen = open_generator(GeneratorSettings(decoding="sample", max_proof_tokens=6), root / "out", None, root / "models")
    assert gen.proof_writer is not None and gen.system_prompt == settings.system_prompt
    assert len(gen.generate_proofs([TacticQuery(goals="", theorem=spec)], 2)) == 1
    metrics = evaluate_sft_proof(
        settings, root / "out", snapshot, "random", ["test"], [env["repo"]], model_cache_dir=root / "models"
    )
    by = {m.metric: m for m in metrics}
    for name in ("sampled_replay_pass@1", "sampled_replay_pass@2", "sampled_baseline_replay_pass@2"):
        assert by[name].count == 2 and by[name].ci_low is not None and by[name].ci_high is not None, name
    assert not any(
        m.metric.startswith(("sampled_repl_", "sampled_kimina_")) for m in metrics
    )  # no Lean ran: nothing says so


def test_sft_proof_is_a_registered_trainer_that_search_accepts():
    from tasks.trainers.registry import get, tactic_generators

    d = get("sft_proof")
    assert d.train_fn() and d.evaluate_fn() and "sft_proof" in tactic_generators()
    assert Path(d.train_fn().__code__.co_filename).name == "train.py"


def test_a_steps_data_adds_the_named_sets_verified_proofs_never_claimed_ones(env):
    from storage.sample import SAMPLE_ROOT
    from storage.statement_sets import record_verified_proofs, statements
    from storage.statement_sets.reader import StatementSetConfig, import_set
    from tasks.sft_proof.sources import step_snapshot

    store, snapshot = env["store"], env["snapshot"]
    import_set(store, StatementSetConfig(path=str(SAMPLE_ROOT / "statements" / "nat-pset.jsonl")), replace=True)
    rows = {r["name"]: r for r in statements(store, ["nat-pset"])}
    assert (
        step_snapshot(store, SFTProofSettings(statement_sets=["nat-pset"]), snapshot, "random") == snapshot
    )  # claimed only
    base = {"toolchain": "v4.20.0", "checker": "repl", "verdict": "proved", "set_name": "nat-pset"}
    record_verified_proofs(store, [
        {**base, "statement_id": rows["pset_add_comm"]["statement_id"], "name": "pset_add_comm", "proof": "by omega", "origin": "claimed"},
        {**base, "statement_id": rows["pset_le_add"]["statement_id"], "name": "pset_le_add", "proof": "by omega", "origin": "expert_iteration"},
    ])  # fmt: skip
    mixed = step_snapshot(store, SFTProofSettings(statement_sets=["nat-pset"]), snapshot, "random")
    extra = extra_proofs(mixed, "random")
    assert [(r["full_name"], r["proof"], r["origin"]) for r in extra] == [("pset_add_comm", "omega", "statement_set")]
    assert "pset_add_comm" in extra[0]["statement"] and mixed.snapshot_id != snapshot.snapshot_id
    assert step_snapshot(store, SFTProofSettings(), snapshot, "random") == snapshot  # no set named: the step's own
