"""The trainer interface (tasks/trainers): every registered trainer satisfies it, a trainer
registered by one call appears in the config and preflight, `starts_from` orders trainers
and enters the checkpoint id, and one check covers every trainer's `training:` arguments."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from storage.errors import InputError
from tasks.trainers import registry
from tasks.trainers.base import EvaluateFn, TrainerDef, TrainFn, signature_mismatch
from tasks.trainers.training_args import check_training_args
from tests.echo_trainer import ECHO, EchoSettings


@pytest.mark.parametrize("name", sorted(registry.trainers()))
def test_every_registered_trainer_satisfies_the_interface(name):
    d = registry.trainers()[name]
    assert d.name == name and issubclass(d.settings, BaseModel)
    assert d.description and d.holds
    assert signature_mismatch(d.train_fn(), TrainFn) is None
    assert signature_mismatch(d.evaluate_fn(), EvaluateFn) is None
    d.settings()  # the defaults are valid settings
    for attr in d.model_fields:
        assert attr in d.settings.model_fields, f"{name}: model field {attr} is not a setting"


def test_a_function_with_the_wrong_signature_is_refused_when_loaded():
    bad = TrainerDef(
        name="bad",
        settings=BaseModel,
        train="tests.tasks.test_trainers:_wrong_train",
        evaluate="tests.tasks.test_trainers:_wrong_train",
        description="d",
        holds="h",
    )
    with pytest.raises(TypeError, match="expected \\['settings', 'snapshot'"):
        bad.train_fn()
    assert "model_cache_dir" in signature_mismatch(
        lambda settings, snapshot, split_kind, parent_dir, out_dir, work_dir: {}, TrainFn
    )


def _wrong_train(settings, snapshot, parent_dir):
    return {}


def test_naming_the_trainers_imports_no_torch():
    code = (
        "import sys; from tasks.config import PipelineConfig; from tasks.trainers.registry import trainers; "
        "PipelineConfig(); trainers(); print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# -- a trainer of the tests' own (tests/echo_trainer.py), registered with one call -------------------
@pytest.fixture
def echo():
    registry.register(ECHO)
    yield ECHO
    registry.unregister("echo")


def test_a_trainer_registered_by_one_call_appears_in_the_config_and_preflight(echo, tmp_path):
    from tasks.config import PipelineConfig

    schema = PipelineConfig.model_json_schema()
    assert schema["$defs"]["TrainersConfig"]["properties"]["echo"]["description"] == "A test trainer."
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"sources": [{"export": str(tmp_path)}], "trainers": {"echo": {"scale": 2}}}))
    cfg = PipelineConfig.from_yaml(path)
    assert cfg.trainers.echo.scale == 2
    assert list(cfg.validate_for_run()) == ["sft", "echo"]  # echo starts from sft: sft trains first
    path.write_text(yaml.safe_dump({"sources": [{"export": str(tmp_path)}], "trainers": {"echo": {"scale": 200}}}))
    with pytest.raises(InputError, match=r"trainers\.echo\.scale: is too large"):
        PipelineConfig.from_yaml(path).validate_for_run()
    path.write_text(yaml.safe_dump({"sources": [{"export": str(tmp_path)}], "trainers": {"sft": None, "echo": {}}}))
    with pytest.raises(InputError, match=r"trainers\.echo.*starts from the checkpoint of trainer 'sft', which is off"):
        PipelineConfig.from_yaml(path).validate_for_run()
    registry.unregister("echo")
    with pytest.raises(InputError, match="`trainers.echo` is not a known field"):
        PipelineConfig.from_yaml(path)


def test_starts_from_picks_the_same_step_checkpoint_and_enters_the_id(echo):
    from tasks.checkpoints import CheckpointRef, StartingPoints, plan_step

    def ref(cid, trainer):
        return CheckpointRef(
            checkpoint_id=cid,
            trainer=trainer,
            path=f"/x/{cid}",
            snapshot_id="s",
            parent_id=None,
            settings_hash="h",
            figures={},
        )

    previous = {"echo": ref("e1", "echo"), "sft": ref("s1", "sft")}
    plan = plan_step(
        "echo", EchoSettings(), "s2", StartingPoints(previous=previous, this_step={"sft": ref("s2", "sft")})
    )
    assert plan.parent.checkpoint_id == "s2" and plan.starts_from == "sft"
    other = plan_step(
        "echo", EchoSettings(), "s2", StartingPoints(previous=previous, this_step={"sft": ref("s3", "sft")})
    )
    assert other.checkpoint_id != plan.checkpoint_id  # the dependency is part of the id
    assert (
        plan_step(
            "echo",
            EchoSettings(log_every=50),
            "s2",
            StartingPoints(previous=previous, this_step={"sft": ref("s2", "sft")}),
        ).checkpoint_id
        == plan.checkpoint_id
    )
    with pytest.raises(InputError, match="not trained first"):
        plan_step("echo", EchoSettings(), "s2", StartingPoints(previous=previous))
    # without starts_from a trainer continues from its own previous checkpoint
    sft = plan_step("sft", registry.get("sft").settings(), "s2", StartingPoints(previous=previous))
    assert sft.parent.checkpoint_id == "s1" and sft.starts_from is None


def test_a_cycle_of_starts_from_is_refused(echo):
    with pytest.raises(InputError, match="starts from itself"):
        registry.training_order({"echo": EchoSettings(), "sft": type("S", (), {"starts_from": "echo"})()})


# -- training arguments: one check for every trainer --------------------------------------------------------
TARGETS = [("trl:SFTConfig", "trainers.sft.training"), ("transformers:TrainingArguments", "trainers.progress.training")]


@pytest.mark.parametrize("target,field", TARGETS)
@pytest.mark.parametrize(
    "training,key,problem",
    [
        ({"learning_rte": 1e-4}, "learning_rte", "did you mean learning_rate"),
        ({"max_steps": "many"}, "max_steps", "has the wrong type"),
        ({"output_dir": "/x"}, "output_dir", "cannot be set"),
        ({"resume_from_checkpoint": "/x"}, "resume_from_checkpoint", "cannot be set"),
        ({"num_train_epochs": -1}, "num_train_epochs", "would train nothing"),
        ({"num_train_epochs": 0}, "num_train_epochs", "would train nothing"),
        ({"max_steps": 0}, "max_steps", "would train nothing"),
        ({"learning_rate": -1e-4}, "learning_rate", "positive rate"),
        ({"per_device_train_batch_size": 0}, "per_device_train_batch_size", "at least 1"),
    ],
)
def test_training_arguments_are_checked_alike_for_every_trainer(target, field, training, key, problem):
    with pytest.raises(InputError) as err:
        check_training_args(training, target, field)
    assert err.value.source == f"{field}.{key}"
    assert problem in str(err.value)


@pytest.mark.parametrize("target,field", TARGETS)
def test_training_arguments_accepted_alike(target, field):
    assert check_training_args({"learning_rate": "1e-4", "max_steps": 3}, target, field) == {
        "learning_rate": 1e-4,
        "max_steps": 3,
    }
    assert check_training_args({"num_train_epochs": 0, "max_steps": 3}, target, field)["max_steps"] == 3
    with pytest.raises(InputError, match="bogus"):
        check_training_args({"save_strategy": "bogus"}, target, field)


@pytest.mark.parametrize("trainer", ["sft", "progress"])
def test_a_yaml_config_that_would_train_nothing_fails_naming_the_key(trainer, tmp_path):
    from tasks.config import PipelineConfig

    path = tmp_path / "c.yaml"
    path.write_text(
        f"sources: [{{export: {tmp_path}}}]\ntrainers:\n  {trainer}:\n    training: {{num_train_epochs: -1, learning_rate: 1e-4}}\n"
    )
    cfg = PipelineConfig.from_yaml(path)
    assert getattr(cfg.trainers, trainer).training["learning_rate"] == 1e-4  # YAML 1.2 floats
    with pytest.raises(InputError, match=rf"trainers\.{trainer}\.training\.num_train_epochs"):
        cfg.validate_for_run()


@pytest.mark.parametrize(
    "text,field",
    [
        ("trainers: [sft]\n", "trainers"),
        ("sources: 5\n", "sources"),
        ("sources: [{repo: ''}]\n", "sources.0.repo"),
        ("sources: [{export: ''}]\n", "sources.0.export"),
        ("trainers: {sft: [1]}\n", "trainers.sft"),
    ],
)
def test_a_config_of_the_wrong_shape_is_an_input_error_naming_the_field(text, field, tmp_path):
    from tasks.config import PipelineConfig

    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(InputError, match=rf"`{field}`"):
        PipelineConfig.from_yaml(path)


def test_load_yaml_reads_exponents_as_numbers_and_names_a_bad_file(tmp_path):
    from tasks.yaml_config import load_yaml_mapping

    p = tmp_path / "x.yaml"
    p.write_text("a: 1e-4\nb: 2E+3\nc: '1e-4'\nd: abc\n")
    assert load_yaml_mapping(p, "ex") == {"a": 1e-4, "b": 2000.0, "c": "1e-4", "d": "abc"}
    p.write_text("- 1\n")
    with pytest.raises(InputError, match="must be a mapping"):
        load_yaml_mapping(p, "ex")
    with pytest.raises(InputError, match="does not exist"):
        load_yaml_mapping(tmp_path / "none.yaml", "ex")


def test_latest_trainer_checkpoint_skips_incomplete_ones(tmp_path):
    from tasks.models.loading import latest_trainer_checkpoint

    assert latest_trainer_checkpoint(tmp_path / "missing") is None
    for n, complete in ((2, True), (10, True), (12, False)):
        d = tmp_path / f"checkpoint-{n}"
        d.mkdir()
        if complete:
            (d / "trainer_state.json").write_text("{}")
    assert latest_trainer_checkpoint(tmp_path) == Path(tmp_path / "checkpoint-10")


def test_remove_tree_leaves_no_half_deleted_folder(tmp_path, monkeypatch):
    from storage import atomic
    from storage.atomic import remove_tree

    d = tmp_path / "ckpt"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "w.bin").write_bytes(b"1")
    real_rmtree, deleted = atomic.shutil.rmtree, []

    def rmtree(p, **kw):  # by the time any file is deleted, the folder is renamed away
        assert not d.exists() and Path(p) != d
        deleted.append(p)
        real_rmtree(p, **kw)

    monkeypatch.setattr(atomic.shutil, "rmtree", rmtree)
    remove_tree(d)
    assert deleted
    assert list(tmp_path.iterdir()) == []
    remove_tree(d)  # already gone: nothing to do


def test_the_example_trainer_of_the_docs_works_as_written(tmp_path, monkeypatch):
    """docs/adding-a-trainer.md: its three files, registered with one call, train and evaluate."""
    import re

    from tasks.config import PipelineConfig
    from tests.fixtures_snapshot import make_snapshot, synthetic_rows

    text = (Path(__file__).resolve().parents[2] / "docs" / "adding-a-trainer.md").read_text()
    package = tmp_path / "frequent_doc"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in ("config.py", "train.py", "trainer.py"):
        block = re.search(rf"`tasks/frequent/{name}`.*?```python\n(.*?)```", text, re.S).group(1)
        (package / name).write_text(block.replace("tasks.frequent.", "frequent_doc."))
    monkeypatch.syspath_prepend(str(tmp_path))
    from frequent_doc.trainer import TRAINER

    registry.register(TRAINER)
    try:
        cfg = PipelineConfig.model_validate(
            {"sources": [{"export": str(tmp_path)}], "trainers": {"frequent": {"keep": 3}}}
        )
        assert list(cfg.validate_for_run()) == ["sft", "frequent"]
        snapshot = make_snapshot(tmp_path / "snap", synthetic_rows(12, ("repoA",), seed=1))
        figures = TRAINER.train_fn()(
            cfg.trainers.frequent,
            snapshot,
            "random",
            None,
            tmp_path / "out",
            tmp_path / "work",
            model_cache_dir=tmp_path,
        )
        assert figures["tactics"] > 0
        metrics = TRAINER.evaluate_fn()(
            cfg.trainers.frequent, tmp_path / "out", snapshot, "random", ["train"], ["repoA"], model_cache_dir=tmp_path
        )
        assert [m.metric for m in metrics] == ["top1_accuracy"] and 0 <= metrics[0].value <= 1
    finally:
        registry.unregister("frequent")


def test_the_grpo_declaration_in_the_docs_is_the_real_one():
    """docs/adding-a-trainer.md shows GRPO's declaration as tasks/grpo/trainer.py has it."""
    import re

    from tasks.grpo.config import GRPOSettings
    from tasks.grpo.trainer import TRAINER as real
    from tasks.trainers.base import TrainerDef

    text = (Path(__file__).resolve().parents[2] / "docs" / "adding-a-trainer.md").read_text()
    block = re.search(r"## A trainer that starts from another.*?```python\n(.*?)```", text, re.S).group(1)
    shown: dict = {}
    exec(block, {"TrainerDef": TrainerDef, "GRPOSettings": GRPOSettings}, shown)
    assert shown["TRAINER"] == real


# -- mixed precision: one rule, one error shape, checked at preflight for every Trainer-based trainer ----------------
@pytest.mark.parametrize("trainer", ["sft", "grpo", "progress"])
@pytest.mark.parametrize(
    "precision,problem",
    [("fp16", "is true but this machine has no CUDA GPU"), ("bf16", "is true but this machine has no GPU with bf16")],
)
def test_mixed_precision_this_machine_cannot_do_is_refused_at_preflight_alike(
    trainer, precision, problem, monkeypatch, tmp_path
):
    """GRPO had no fp16 refusal and each trainer its own message: now one rule in check_training_args."""
    from tasks.trainers import training_args
    from tasks.trainers.preflight import preflight

    monkeypatch.setattr(training_args, "device_capabilities", lambda: (False, False))  # a machine with no GPU
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # no remembered pass of another machine's check
    settings = registry.get(trainer).settings(training={precision: True})
    with pytest.raises(InputError) as err:
        preflight(trainer, settings)
    field = f"trainers.{trainer}.training"
    assert (err.value.source, err.value.where) == (f"{field}.{precision}", None)
    assert err.value.problem.startswith(problem)
    assert err.value.fix.startswith(f"set {field}.{precision} to false, or run this step on a")


# -- which trainers generate tactics, and the step evaluations: declared, not listed by hand -------------------
def test_tactic_generators_are_the_trainers_that_declare_it(echo):
    import dataclasses

    from tasks.checkpoints import CheckpointRef
    from tasks.generate.checkpoint import is_tactic_generator

    assert registry.tactic_generators() == ("sft", "grpo", "sft_proof")
    ref = CheckpointRef(
        checkpoint_id="c", trainer="echo", path="/x", snapshot_id="s", parent_id=None, settings_hash="h", figures={}
    )
    assert not is_tactic_generator(ref)
    registry.register(dataclasses.replace(ECHO, generates_tactics=True))  # one declaration, nothing else
    assert "echo" in registry.tactic_generators() and is_tactic_generator(ref)
    assert not is_tactic_generator(ref.model_copy(update={"has_model": False}))


def test_every_declared_evaluation_is_a_config_section_checked_before_a_run(tmp_path, monkeypatch):
    from tasks import evaluations
    from tasks.config import EvaluationConfig, PipelineConfig

    assert [e.name for e in evaluations.EVALUATIONS] == ["proving"]
    for e in evaluations.EVALUATIONS:
        field = EvaluationConfig.model_fields[e.name]
        assert field.default is None and field.description == e.description  # off unless asked for
    checked = []
    monkeypatch.setattr(evaluations, "check_proving", lambda settings, field: checked.append(field))
    export = tmp_path / "export"
    export.mkdir()
    cfg = PipelineConfig.model_validate(
        {"sources": [{"export": str(export)}], "trainers": {"sft": None, "progress": {}}, "evaluation": {"proving": {}}}
    )
    cfg.validate_for_run()
    assert checked == ["evaluation.proving"]


@pytest.mark.parametrize("kind", ["trainer", "backend"])
def test_an_unknown_name_is_one_line_naming_it_the_problem_and_the_names_there_are(kind):
    """Both registries look a name up the same way (storage.errors.one_of): the name (quoted when it
    holds a line break), the field, what it is not, and every registered name in registration order."""
    from tasks.lean import registry as backends

    get, names, where = {
        "trainer": (registry.get, registry.trainers(), "trainer"),
        "backend": (backends.get, backends.backends(), "backend.kind"),
    }[kind]
    with pytest.raises(InputError) as err:
        get("no\nsuch")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"'no\\nsuch', {where}: is not a")
    assert msg.endswith(f"use one of {', '.join(names)}")


def test_checking_training_arguments_in_a_torchrun_process_starts_no_process_group(monkeypatch):
    # The check builds the class on CPU; under torchrun that started torch.distributed with gloo,
    # which the Trainer then kept: on a GPU machine no NCCL, and GRPO's reward gather failed
    # ("ProcessGroupGloo::allgather: invalid tensor size", benchmarks/gpu_check.py on an H200).
    import torch.distributed as dist

    from tests.ports import free_port

    assert not dist.is_initialized()
    torchrun = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "LOCAL_WORLD_SIZE": "1", "GROUP_RANK": "0"}
    for name, value in {**torchrun, "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(free_port())}.items():
        monkeypatch.setenv(name, value)
    try:
        check_training_args({"max_steps": 3}, "trl:SFTConfig", "trainers.sft.training")
        assert not dist.is_initialized()
        assert all(os.environ[k] == v for k, v in torchrun.items())  # the process's own variables are back
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()
