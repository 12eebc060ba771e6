"""The retriever's `training:` (Lightning Trainer) and `optimizer:` (AdamW) sections: checked by the
check every trainer shares, old flat keys refused naming their new place, old checkpoints'
settings read, and checkpoint ids unchanged for identical settings."""

from __future__ import annotations

import pytest

from storage.errors import InputError
from tasks.checkpoints import training_identity
from tasks.retriever.config import RetrieverSettings, resolve_training

# What `training_identity("retriever", ...)` hashed before `training:` existed (the flat layout),
# printed by the code of commit 695d6fc: the default settings, and settings that change every
# formerly flat Trainer and AdamW value.
FLAT_DEFAULT_IDENTITY = {
    "backbone": "builtin:tiny-encoder",
    "max_seq_len": 512,
    "num_negatives": 3,
    "num_in_file_negatives": 1,
    "loss": "mse",
    "temperature": 0.05,
    "lr": 0.0001,
    "weight_decay": 0.0,
    "warmup_steps": 0,
    "batch_size": 8,
    "accumulate_grad_batches": 1,
    "gradient_clip_val": 1.0,
    "max_epochs": 1,
    "max_steps": -1,
    "ewc_lambda": 0.1,
    "fisher_examples": 128,
    "seed": 3407,
    "accelerator": "cpu",
    "devices": 1,
    "strategy": "auto",
    "precision": "32-true",
}
FLAT_CHANGED_IDENTITY = {
    **FLAT_DEFAULT_IDENTITY,
    "max_seq_len": 64,
    "batch_size": 4,
    "lr": 0.001,
    "weight_decay": 0.01,
    "warmup_steps": 5,
    "accumulate_grad_batches": 2,
    "gradient_clip_val": None,
    "max_epochs": 2,
    "max_steps": 3,
    "ewc_lambda": 10.0,
    "accelerator": "gpu",
    "devices": "0,1",
    "strategy": "ddp",
    "precision": "bf16-mixed",
}
CHANGED = RetrieverSettings(
    max_seq_len=64,
    batch_size=4,
    optimizer={"lr": 1e-3, "weight_decay": 0.01, "warmup_steps": 5},
    training={
        "max_epochs": 2,
        "max_steps": 3,
        "accelerator": "gpu",
        "precision": "bf16-mixed",
        "gradient_clip_val": None,
        "devices": "0,1",
        "accumulate_grad_batches": 2,
        "strategy": "ddp",
        "log_every_n_steps": 3,  # bookkeeping: never in the id
    },
    ewc_lambda=10.0,
)


def test_identical_settings_keep_the_checkpoint_ids_they_had_before_the_training_section():
    assert training_identity("retriever", RetrieverSettings()) == FLAT_DEFAULT_IDENTITY
    assert training_identity("retriever", CHANGED) == FLAT_CHANGED_IDENTITY
    # Written out, a default is the same setting: YAML's `gradient_clip_val: 1` was the float 1.0.
    explicit = RetrieverSettings(training={"gradient_clip_val": 1, "max_epochs": 1}, optimizer={"lr": 1e-4})
    assert training_identity("retriever", explicit) == FLAT_DEFAULT_IDENTITY


def test_a_trainer_argument_that_was_never_a_setting_enters_the_id_under_training():
    identity = training_identity("retriever", RetrieverSettings(training={"gradient_clip_algorithm": "value"}))
    assert identity == {**FLAT_DEFAULT_IDENTITY, "training": {"gradient_clip_algorithm": "value"}}


@pytest.mark.parametrize(
    "line,moved",
    [
        ("lr: 1.0e-3", "`lr` moved to `optimizer.lr`: write `optimizer: {lr: 0.001}`"),
        ("max_steps: 5", "`max_steps` moved to `training.max_steps`: write `training: {max_steps: 5}`"),
        ("precision: bf16-mixed", "`precision` moved to `training.precision`"),
    ],
)
def test_a_config_with_a_flat_key_of_the_old_layout_fails_naming_its_new_place(tmp_path, line, moved):
    from typer.testing import CliRunner

    from flows.cli import app
    from tasks.config import PipelineConfig

    path = tmp_path / "old.yaml"
    path.write_text(f"trainers:\n  retriever:\n    backbone: builtin:tiny-encoder\n    {line}\n")
    with pytest.raises(InputError, match="trainers.retriever") as err:
        PipelineConfig.from_yaml(path)
    assert moved in str(err.value) and "\n" not in str(err.value)
    r = CliRunner().invoke(app, ["run", str(path), "--home", str(tmp_path / "home")], env={"COLUMNS": "300"})
    assert r.exit_code == 2 and moved in r.output, r.output
    assert not (tmp_path / "home").exists()  # nothing written


def test_a_checkpoint_written_before_the_move_reads_its_flat_settings_into_the_sections():
    saved = {**FLAT_CHANGED_IDENTITY, "eval_batch_size": 3, "log_every_n_steps": 3, "a_retired_field": 1}
    settings = RetrieverSettings.from_stored(saved)
    assert settings.optimizer.lr == 1e-3 and settings.optimizer.warmup_steps == 5
    assert settings.trainer_arg("precision") == "bf16-mixed" and settings.trainer_arg("accelerator") == "gpu"
    assert settings.training["log_every_n_steps"] == 3 and settings.eval_batch_size == 3
    assert training_identity("retriever", settings) == FLAT_CHANGED_IDENTITY
    # and a checkpoint of this layout reads back as written
    assert RetrieverSettings.from_stored(CHANGED.model_dump(mode="json")) == CHANGED


CPU, GPU_NO_BF16 = (False, False), (True, False)


@pytest.mark.parametrize(
    "training,machine,key,problem",
    [
        ({"max_stepz": 3}, CPU, "max_stepz", "is not an argument of pytorch_lightning.Trainer. did you mean max_steps"),
        ({"callbacks": []}, CPU, "callbacks", "cannot be set"),
        ({"default_root_dir": "/tmp"}, CPU, "default_root_dir", "cannot be set"),
        ({"max_steps": 0}, CPU, "max_steps", "would train nothing"),
        ({"max_epochs": 0}, CPU, "max_epochs", "would train nothing"),
        ({"max_epochs": -1}, CPU, "max_epochs", "never end"),
        ({"accumulate_grad_batches": 0}, CPU, "accumulate_grad_batches", "must be at least 1"),
        ({"gradient_clip_val": float("nan")}, CPU, "gradient_clip_val", "is not a finite number"),
        ({"precision": "bogus"}, CPU, "precision", "has the wrong type"),
        ({"precision": "16-mixed"}, CPU, "precision", "(fp16) but this step does not run on a CUDA GPU"),
        ({"accelerator": "gpu"}, CPU, "accelerator", "this machine has no CUDA GPU"),
        ({"accelerator": "gpu", "precision": "bf16-mixed"}, GPU_NO_BF16, "precision", "no GPU with bf16 support"),
    ],
)
def test_lightning_trainer_arguments_are_checked_by_the_shared_check(training, machine, key, problem):
    with pytest.raises(InputError) as err:
        resolve_training(RetrieverSettings(training=training), "trainers.retriever.training", machine=machine)
    assert err.value.source == f"trainers.retriever.training.{key}"
    assert problem in str(err.value)


def test_lightning_trainer_arguments_are_resolved_over_the_defaults_with_yaml_strings_coerced():
    resolved = resolve_training(
        RetrieverSettings(training={"max_epochs": "3", "max_steps": 10, "gradient_clip_algorithm": "value"}),
        machine=CPU,
    )
    assert resolved["max_epochs"] == 3 and resolved["max_steps"] == 10 and resolved["precision"] == "32-true"
    assert resolved["gradient_clip_algorithm"] == "value"
    on_gpu = resolve_training(
        RetrieverSettings(training={"precision": "16-mixed", "accelerator": "gpu"}), machine=(True, True)
    )
    assert on_gpu["precision"] == "16-mixed"
    assert resolve_training(RetrieverSettings(training={"precision": "bf16-mixed"}), machine=CPU)  # CPU autocast


def test_the_sections_render_in_the_config_form_with_a_description_on_every_field():
    from tasks.config import PipelineConfig

    defs = PipelineConfig.model_json_schema()["$defs"]
    retriever, adamw = defs["RetrieverSettings"]["properties"], defs["AdamWSettings"]["properties"]
    assert {"training", "optimizer"} <= set(retriever) and not {"lr", "max_steps", "precision"} & set(retriever)
    assert (
        retriever["training"]["type"] == "object"
        and "pytorch_lightning.Trainer" in retriever["training"]["description"]
    )
    missing = [f for f, p in {**retriever, **adamw}.items() if not p.get("description")]
    assert missing == []
