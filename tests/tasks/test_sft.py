"""SFT tactic generator (tasks/sft): data conversion, settings, real training on a tiny
local model, continuation, LoRA, resume after a crash, and evaluation."""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from pydantic import ValidationError

from storage.errors import InputError
from storage.schemas import SNAPSHOT_TACTICS
from tasks.models import TINY_CAUSAL_LM, load_causal_lm, resolve_model
from tasks.sft import SFTSettings, evaluate_sft, generate_tactics, generate_tactics_batch, train_sft
from tasks.sft.config import build_sft_config, checkpointing_key, default_training_args
from tasks.sft.data import build_examples, first_line, fit_state, is_sorry, normalize_tactic, to_sft_dataset
from tasks.trainers.base import SkipTraining
from tests.fixtures_snapshot import make_snapshot, synthetic_rows

SORRY_ROWS = [
    {"repo_id": "repoA", "full_name": "repoA.open1", "state_before": "⊢ False", "tactic": "sorry", "split": "train"},
    {
        "repo_id": "repoB",
        "full_name": "repoB.open2",
        "state_before": "⊢ 1 = 2",
        "tactic": "exact sorry",
        "split": "train",
    },
]
# Small steps: a few optimizer steps each, so the whole file stays well under a minute.
FAST = {"per_device_train_batch_size": 4, "save_strategy": "no", "logging_steps": 1, "disable_tqdm": True}


def _rows_table(rows: list[dict]) -> pa.Table:
    full = [
        {
            "repo_id": "r",
            "theorem_id": f"t{i}",
            "file_path": "F.lean",
            "full_name": f"thm{i}",
            "idx": i,
            "num_tactics": len(rows),
            "state_after": "no goals",
            "annotated_tactic": r["tactic"],
            "annotations": [],
            **r,
        }
        for i, r in enumerate(rows)
    ]
    return pa.Table.from_pylist(full, schema=SNAPSHOT_TACTICS)


def _weights(folder: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(folder / "model.safetensors")


def _max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k] - b[k]).abs().max()) for k in a)


@pytest.fixture(scope="module", autouse=True)
def _imported_modules_out_of_the_collectors_reach():
    """Every `Trainer.train()` starts with a full garbage collection (accelerate's `free_memory`, for
    GPU memory): in this process (torch, transformers, TRL, Prefect and what earlier tests left) each
    cost 0.3-1 s of CPU, more than most of the tiny trainings here. What training imports is imported
    first and frozen (`gc.freeze`) for this module's tests, so those collections walk only what the
    tests create; it is handed back to the collector (`gc.unfreeze`) when the module ends."""
    import gc

    import accelerate  # noqa: F401
    import datasets  # noqa: F401
    import peft  # noqa: F401
    from trl import SFTConfig, SFTTrainer  # noqa: F401

    frozen_before = gc.get_freeze_count() > 0  # the suite's freeze (tests/conftest.py) stays
    gc.collect()
    gc.freeze()
    yield
    if not frozen_before:
        gc.unfreeze()


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    root = tmp_path_factory.mktemp("sft")
    rows = (
        synthetic_rows(20, ("repoA",), seed=1)
        + synthetic_rows(20, ("repoB",), seed=2, splits=["train", "train", "val"])  # repoB has no test rows
        + SORRY_ROWS
    )
    cache = root / "models"
    return {
        "root": root,
        "cache": cache,
        "base_dir": Path(resolve_model(TINY_CAUSAL_LM, cache)),
        "snapshot": make_snapshot(root / "snap", rows),
        "n_train": sum(1 for r in rows if r["split"] == "train"),
    }


@pytest.fixture(scope="module")
def parent(env):
    """A full-model checkpoint trained from the base for 3 steps."""
    settings = SFTSettings(training={**FAST, "max_steps": 3, "learning_rate": 3e-3})
    out = env["root"] / "parent"
    figures = train_sft(
        settings, env["snapshot"], "random", None, out, env["root"] / "work-parent", model_cache_dir=env["cache"]
    )
    return out, figures


# -- data -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "tactic, expected",
    [
        ("sorry", True),
        ("exact sorry", True),
        ("· simp\n  sorry", True),  # anywhere in a multi-line tactic
        ("admit", True),
        ("exact sorry_lemma h", False),  # an identifier that merely starts with sorry
        ("exact Foo.sorry", False),
        ("simp [sorryless]", False),
        ("simp", False),
    ],
)
def test_is_sorry(tactic, expected):
    assert is_sorry(tactic) is expected


def test_examples_skip_sorry_keep_first_line_in_chat_format():
    table = _rows_table(
        [
            {"state_before": "n : ℕ\n⊢ n + 0 = n", "tactic": "simp"},
            {"state_before": "⊢ False", "tactic": "sorry"},
            {"state_before": "⊢ p ∧ q", "tactic": "constructor\n  · exact hp\n  · exact hq"},
            {"state_before": "⊢ a", "tactic": "   \n  "},
            {"state_before": "⊢ b", "tactic": "  exact   h  "},
        ]
    )
    ex = build_examples(table, "SYS")
    assert (len(ex), ex.skipped_sorry, ex.skipped_empty) == (3, 1, 1)
    assert ex.tactics == ["simp", "constructor", "exact   h"]
    assert ex.idxs == [0, 2, 4]  # row order kept, ids carried along
    assert ex.prompts[1] == [{"role": "system", "content": "SYS"}, {"role": "user", "content": "⊢ p ∧ q"}]
    assert ex.completions[1] == [{"role": "assistant", "content": "constructor"}]

    ds = to_sft_dataset(table, "SYS")
    assert ds.column_names == ["prompt", "completion"]
    from trl.data_utils import is_conversational

    assert is_conversational(ds[0])
    assert ds[2]["completion"][0]["content"] == "exact   h"


def test_tactic_normal_form():
    assert first_line("\n\n  rw [h]\n  simp") == "rw [h]"
    assert normalize_tactic("simp  [a,  b]\nfoo") == normalize_tactic(" simp [a, b] ") == "simp [a, b]"


def test_fit_state_keeps_the_goal(env):
    from tasks.models import load_tokenizer

    tok = load_tokenizer(env["base_dir"])
    hyps = "\n".join(f"h{i} : x{i} ≤ x{i + 1}" for i in range(200))
    state = hyps + "\n⊢ x0 ≤ x200"
    cut = fit_state(state, tok, 64)
    assert cut.startswith("…") and cut.endswith("⊢ x0 ≤ x200")
    assert len(tok(cut, add_special_tokens=False).input_ids) <= 64
    assert fit_state("⊢ True", tok, 64) == "⊢ True"
    assert fit_state(state, tok, None) == state


# -- settings ---------------------------------------------------------------------------------


def test_building_settings_imports_no_torch():
    import subprocess
    import sys

    code = (
        "import sys; from tasks.sft.config import SFTSettings; SFTSettings(training={'learning_rate': 1e-4}); "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_yaml_style_strings_are_coerced_when_the_config_is_built(tmp_path):
    cfg = build_sft_config(
        SFTSettings(training={"learning_rate": "1e-4", "max_steps": "5"}), tmp_path, cuda=False, bf16_ok=False
    )
    assert cfg.learning_rate == 1e-4 and cfg.max_steps == 5


def test_unknown_settings_field_is_refused():
    with pytest.raises(ValidationError, match="lerning_rate"):
        SFTSettings(lerning_rate=1.0)
    with pytest.raises(ValidationError):
        SFTSettings(lora={"r": 0})


def test_bf16_without_support_fails_before_training(tmp_path):
    s = SFTSettings(training={"bf16": True})
    with pytest.raises(InputError) as err:
        build_sft_config(s, tmp_path, cuda=False, bf16_ok=False)
    assert "training.bf16: is true but this machine has no GPU with bf16 support" in str(err.value)
    assert "set training.bf16 to false" in str(err.value)
    with pytest.raises(InputError, match="training.fp16: is true but this machine has no CUDA GPU"):
        build_sft_config(SFTSettings(training={"fp16": True}), tmp_path, cuda=False, bf16_ok=False)


def test_cpu_defaults_and_user_values(tmp_path):
    cfg = build_sft_config(SFTSettings(training={"learning_rate": 0.01}), tmp_path / "t", cuda=False, bf16_ok=False)
    assert cfg.use_cpu and not cfg.bf16 and not cfg.fp16 and not cfg.gradient_checkpointing
    assert cfg.learning_rate == 0.01 and cfg.output_dir == str(tmp_path / "t")
    assert cfg.completion_only_loss is True and cfg.packing is False and cfg.report_to in ("none", [], ["none"])
    # A user's choice is never overridden by a default.
    cfg = build_sft_config(SFTSettings(training={"gradient_checkpointing": True}), tmp_path, cuda=False, bf16_ok=False)
    assert cfg.gradient_checkpointing
    gpu = default_training_args({}, cuda=True, bf16_ok=True)
    assert gpu["bf16"] is True and "use_cpu" not in gpu
    assert default_training_args({}, cuda=True, bf16_ok=False)["bf16"] is False


def test_cpu_turns_checkpointing_off_under_the_name_this_transformers_has():
    # transformers 5.17 (the train-vllm pin, the GPU image's) has only `gradient_checkpointing`: the
    # CPU default `activation_checkpointing=False` made SFTConfig fail there (gpu_check --smoke).
    import dataclasses

    from transformers import TrainingArguments

    fields = {f.name for f in dataclasses.fields(TrainingArguments)}
    assert checkpointing_key(fields - {"activation_checkpointing"}) == "gradient_checkpointing"
    assert checkpointing_key(fields | {"activation_checkpointing"}) == "activation_checkpointing"
    cpu = default_training_args({}, cuda=False, bf16_ok=False)
    assert cpu[checkpointing_key()] is False and checkpointing_key() in fields


# -- training ----------------------------------------------------------------------------------


def test_sft_run_writes_loadable_checkpoint(env, parent):
    out, figures = parent
    assert figures["steps"] == 3 and figures["mode"] == "full" and figures["started_from"] == "base"
    assert figures["examples"] == env["n_train"] - len(SORRY_ROWS) and figures["skipped_sorry"] == 2
    assert math.isfinite(figures["train_loss"]) and figures["train_loss"] > 0 and figures["seconds"] > 0
    json.dumps(figures)  # a task result must be JSON
    for name in ("model.safetensors", "config.json", "tokenizer.json", "sft_config.json", "dojoflow_model.json"):
        assert (out / name).is_file(), name
    info = json.loads((out / "dojoflow_model.json").read_text())
    assert info["kind"] == "full" and info["trainer"] == "sft"
    assert _max_diff(_weights(out), _weights(env["base_dir"])) > 1e-4  # training moved the weights

    model, tok = load_causal_lm(out, env["cache"])
    tactics = generate_tactics(model, tok, "p q : Prop\nhp : p\nhq : q\n⊢ p ∧ q", 3, max_new_tokens=8)
    assert 1 <= len(tactics) <= 3
    assert all(isinstance(t, str) and t and lp <= 0 for t, lp in tactics)
    assert [lp for _, lp in tactics] == sorted((lp for _, lp in tactics), reverse=True)
    assert len({normalize_tactic(t) for t, _ in tactics}) == len(tactics)


def test_empty_train_split_skips(env, tmp_path):
    only_val = make_snapshot(tmp_path / "a", [{"state_before": "⊢ True", "tactic": "trivial", "split": "val"}])
    with pytest.raises(SkipTraining, match="no tactics"):
        train_sft(SFTSettings(), only_val, "random", None, tmp_path / "o", tmp_path / "w", model_cache_dir=env["cache"])
    only_sorry = make_snapshot(tmp_path / "b", SORRY_ROWS)
    with pytest.raises(SkipTraining, match="sorry"):
        train_sft(
            SFTSettings(), only_sorry, "random", None, tmp_path / "o", tmp_path / "w", model_cache_dir=env["cache"]
        )
    assert not (tmp_path / "o").exists()
    with pytest.raises(InputError, match="has no bogus/train split"):
        train_sft(SFTSettings(), only_val, "bogus", None, tmp_path / "o", tmp_path / "w", model_cache_dir=env["cache"])


def test_continuing_starts_from_parent_not_base(env, parent, tmp_path):
    parent_dir, _ = parent
    settings = SFTSettings(training={**FAST, "max_steps": 1, "learning_rate": 1e-6})
    figures = train_sft(
        settings,
        env["snapshot"],
        "random",
        parent_dir,
        tmp_path / "child",
        tmp_path / "w",
        model_cache_dir=env["cache"],
    )
    assert figures["started_from"] == "parent"
    child, par, base = _weights(tmp_path / "child"), _weights(parent_dir), _weights(env["base_dir"])
    assert 0 < _max_diff(child, par) < 1e-4  # changed, by one tiny step from the parent...
    assert _max_diff(child, base) > 1e-3  # ...not from the base
    info = json.loads((tmp_path / "child" / "dojoflow_model.json").read_text())
    assert info["parent_dir"] == str(parent_dir)

    restart = SFTSettings(restart_from_base=True, training={**FAST, "max_steps": 1, "learning_rate": 1e-6})
    figures = train_sft(
        restart,
        env["snapshot"],
        "random",
        parent_dir,
        tmp_path / "again",
        tmp_path / "w2",
        model_cache_dir=env["cache"],
    )
    assert figures["started_from"] == "base"
    assert _max_diff(_weights(tmp_path / "again"), base) < 1e-4


def test_lora_writes_adapter_usable_for_inference_and_training(env, parent, tmp_path):
    import torch
    from peft import PeftModel

    lora = {"r": 4, "alpha": 8, "dropout": 0.0}
    settings = SFTSettings(lora=lora, training={**FAST, "max_steps": 2, "learning_rate": 1e-2})
    out = tmp_path / "lora"
    figures = train_sft(settings, env["snapshot"], "random", None, out, tmp_path / "w", model_cache_dir=env["cache"])
    assert figures["mode"] == "lora"
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    assert not (out / "model.safetensors").exists()
    assert json.loads((out / "dojoflow_model.json").read_text())["base_model"] == TINY_CAUSAL_LM

    model, tok = load_causal_lm(out, env["cache"])
    assert isinstance(model, PeftModel)
    base, _ = load_causal_lm(env["base_dir"], env["cache"])
    ids = torch.tensor([tok("⊢ p ∧ q").input_ids])
    with torch.no_grad():
        assert not torch.allclose(model(input_ids=ids).logits, base(input_ids=ids).logits)
    assert generate_tactics(model, tok, "⊢ p ∧ q", 2, max_new_tokens=6)

    # The next curriculum step trains the same adapter further...
    again = train_sft(
        settings.model_copy(update={"training": {**FAST, "max_steps": 1}}),
        env["snapshot"],
        "random",
        out,
        tmp_path / "lora2",
        tmp_path / "w2",
        model_cache_dir=env["cache"],
    )
    assert again["mode"] == "lora" and again["started_from"] == "parent"
    # ...and refuses an adapter of another shape, saying how to fix it.
    other = SFTSettings(lora={**lora, "r": 8}, training=FAST)
    with pytest.raises(InputError, match="restart_from_base"):
        train_sft(other, env["snapshot"], "random", out, tmp_path / "x", tmp_path / "w3", model_cache_dir=env["cache"])


def test_resume_after_crash_continues_from_trainer_checkpoint(env, tmp_path):
    from transformers import TrainerCallback

    class Crash(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 3:
                raise RuntimeError("simulated crash")

    settings = SFTSettings(
        training={**FAST, "max_steps": 4, "save_strategy": "steps", "save_steps": 2, "learning_rate": 1e-3}
    )
    snap = env["snapshot"]
    with pytest.raises(RuntimeError, match="simulated crash"):
        train_sft(
            settings,
            snap,
            "random",
            None,
            tmp_path / "a",
            tmp_path / "work",
            model_cache_dir=env["cache"],
            callbacks=[Crash()],
        )
    assert (tmp_path / "work" / "trainer" / "checkpoint-2" / "trainer_state.json").is_file()

    resumed = train_sft(settings, snap, "random", None, tmp_path / "a", tmp_path / "work", model_cache_dir=env["cache"])
    assert resumed["resumed_from"] == "checkpoint-2" and resumed["steps"] == 4

    straight = train_sft(
        settings, snap, "random", None, tmp_path / "b", tmp_path / "work-b", model_cache_dir=env["cache"]
    )
    assert straight["resumed_from"] is None
    # Same data order and optimizer state: resuming gives the weights of an uninterrupted run.
    assert _max_diff(_weights(tmp_path / "a"), _weights(tmp_path / "b")) < 1e-6

    # A run that finished training but died before its checkpoint was renamed into place
    # is taken from its final Trainer checkpoint, without training past the end.
    again = train_sft(settings, snap, "random", None, tmp_path / "c", tmp_path / "work-b", model_cache_dir=env["cache"])
    assert again["resumed_from"] == "checkpoint-4" and again["steps"] == 4
    assert again["train_loss"] == pytest.approx(straight["train_loss"], rel=1e-4)
    assert _max_diff(_weights(tmp_path / "c"), _weights(tmp_path / "b")) == 0.0


# -- evaluation -----------------------------------------------------------------------------------


def test_evaluate_per_repo_and_split(env, parent):
    parent_dir, _ = parent
    settings = SFTSettings(evaluation={"top_k": 3, "max_eval_examples": 5, "max_new_tokens": 8, "batch_size": 5})
    kw = dict(
        snapshot=env["snapshot"],
        split_kind="random",
        splits=["train", "test"],
        repo_ids=["repoA", "repoB"],
        model_cache_dir=env["cache"],
    )
    trained = evaluate_sft(settings, parent_dir, **kw)

    keys = {(m.repo_id, m.split) for m in trained}
    assert keys == {("repoA", "train"), ("repoB", "train"), ("repoA", "test")}  # repoB has no test rows: no rows
    assert {m.metric for m in trained} == {
        "completion_loss",
        "top1_accuracy",
        "top3_accuracy",
        "top1_majority_baseline",
    }
    for m in trained:
        assert m.count == (4 if (m.repo_id, m.split) == ("repoA", "test") else 5)
        if m.metric == "completion_loss":
            assert m.value > 0 and math.isfinite(m.value)
        else:
            assert 0.0 <= m.value <= 1.0
    by = {(m.repo_id, m.split, m.metric): m.value for m in trained}
    assert by[("repoA", "train", "top1_accuracy")] <= by[("repoA", "train", "top3_accuracy")]
    # The majority baseline: the share of repoA's test states whose tactic is the train split's most common.
    train = env["snapshot"].tactics("random", "train", repo_ids=["repoA", "repoB"]).column("tactic").to_pylist()
    counts = Counter(normalize_tactic(t) for t in train if not is_sorry(t))
    top = max(counts.values())
    majority = sorted(t for t, c in counts.items() if c == top)[0]
    test = env["snapshot"].tactics("random", "test", repo_ids=["repoA"]).column("tactic").to_pylist()
    expected = sum(normalize_tactic(t) == majority for t in test) / len(test)
    assert by[("repoA", "test", "top1_majority_baseline")] == pytest.approx(expected)

    # Training lowered the loss on the training split, as measured here.
    base = evaluate_sft(
        settings.model_copy(
            update={"evaluation": settings.evaluation.model_copy(update={"top_k": 1, "max_new_tokens": 1})}
        ),
        env["base_dir"],
        **kw,
    )
    base_by = {(m.repo_id, m.split, m.metric): m.value for m in base}
    for repo in ("repoA", "repoB"):
        assert by[(repo, "train", "completion_loss")] < base_by[(repo, "train", "completion_loss")]
    assert not any(m.metric.startswith("top3") for m in base)  # k = 1: top-1 only

    assert (
        evaluate_sft(settings, parent_dir, env["snapshot"], "random", ["test"], ["repoB"], model_cache_dir=env["cache"])
        == []
    )


def test_batched_generation_equals_one_state_at_a_time(env, parent):
    """Evaluation generates for many states per call (left-padded); the results are those of
    one call per state."""
    parent_dir, _ = parent
    model, tokenizer = load_causal_lm(parent_dir, env["cache"])
    states = ["⊢ a + 0 = a", "h : p ∧ q\n⊢ q ∧ p", "⊢ True", "x y : ℕ\nh : x = y\n⊢ y = x"]
    batched = generate_tactics_batch(model, tokenizer, states, 3, max_new_tokens=8)
    for state, together in zip(states, batched):
        alone = generate_tactics(model, tokenizer, state, 3, max_new_tokens=8)
        assert [t for t, _ in together] == [t for t, _ in alone]
        assert all(abs(a - b) < 1e-3 for (_, a), (_, b) in zip(together, alone))


def test_evaluation_scores_at_most_max_eval_examples_per_repository_and_split(env, parent):
    parent_dir, _ = parent
    settings = SFTSettings(evaluation={"top_k": 1, "max_eval_examples": 3, "max_new_tokens": 4, "batch_size": 2})
    metrics = evaluate_sft(
        settings, parent_dir, env["snapshot"], "random", ["train"], ["repoA", "repoB"], model_cache_dir=env["cache"]
    )
    assert {m.count for m in metrics} == {3}
    assert SFTSettings().evaluation.max_eval_examples is not None  # bounded by default


@pytest.mark.slow
def test_default_settings_learn_on_the_sample_in_the_first_step(tmp_path):
    """What a new user's `dojoflow run` shows at step 1: with the default settings and the tiny
    model, training on the easiest sample repository lowers the loss on its train split and
    gets some tactics exactly right there."""
    from storage.curriculum import curriculum_order
    from storage.sample import SAMPLE_REPOS
    from storage.snapshot import SnapshotSettings, build_snapshot
    from storage.splits import SplitSettings
    from storage.store import Store
    from tasks.config import PipelineConfig, SourceConfig
    from tasks.ingest import ingest_source

    store = Store.open(tmp_path / "home")
    primary = [
        ingest_source(store, SourceConfig(sample=s), SplitSettings(), tmp_path / "home").repo_ids[0]
        for s in SAMPLE_REPOS
    ]
    first = curriculum_order(store, primary)[0].repo_id
    snapshot = build_snapshot(store, [first], SnapshotSettings())
    settings = PipelineConfig().trainers.sft
    assert settings == SFTSettings()
    cache = tmp_path / "home" / "models"
    train_sft(settings, snapshot, "random", None, tmp_path / "out", tmp_path / "work", model_cache_dir=cache)
    kw = dict(snapshot=snapshot, split_kind="random", splits=["train"], repo_ids=[first], model_cache_dir=cache)
    after = {m.metric: m.value for m in evaluate_sft(settings, tmp_path / "out", **kw)}
    before = {m.metric: m.value for m in evaluate_sft(settings, settings.model, **kw)}
    assert after["completion_loss"] < 0.8 * before["completion_loss"]
    assert after["top1_accuracy"] > 0 and before["top1_accuracy"] == 0


def test_the_majority_tactic_is_the_most_common_normalised_non_sorry_tactic_ties_alphabetical():
    from tasks.sft.evaluate import majority_tactic

    table = pa.table({"tactic": ["simp", "omega", "omega  ", "sorry", "sorry", "sorry", "simp", None]})
    assert majority_tactic(table) == "omega"  # omega 2, simp 2 (sorry excluded): the tie goes to "omega"
    assert majority_tactic(pa.table({"tactic": ["sorry"]})) is None
