"""A tiny trainer of the tests' own: it writes which folder it started from, and starts from
SFT's checkpoint of the same step. Registered by one call (`registry.register(ECHO)`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from storage.errors import InputError
from tasks.metric_registry import register_metric
from tasks.trainers.base import TrainerDef

register_metric("echo", direction=None, kind="diagnostic", unit="scale", description="the settings' scale, echoed")


class EchoSettings(BaseModel):
    """A trainer that writes its settings and the folder it started from; for these tests."""

    model_config = ConfigDict(extra="forbid")
    model: str = Field("builtin:tiny-causal-lm", description="Unused base model (checked by preflight).")
    scale: float = Field(1.0, description="Changes the 'weights'.")
    log_every: int = Field(5, description="Bookkeeping only.", json_schema_extra={"checkpoint_id": False})


def echo_train(settings, snapshot, split_kind, parent_dir, out_dir, work_dir, *, model_cache_dir):
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "started_from.txt").write_text(str(parent_dir))
    return {"parent_dir": str(parent_dir) if parent_dir else None}


def echo_evaluate(settings, checkpoint_dir, snapshot, split_kind, splits, repo_ids, *, model_cache_dir):
    from tasks.trainers.base import Metric

    return [Metric(r, s, "echo", settings.scale, 1) for r in repo_ids for s in splits]


def echo_preflight(settings, field):
    if settings.scale > 100:
        raise InputError(f"{field}.scale", "is too large", "use at most 100")


ECHO = TrainerDef(
    name="echo",
    settings=EchoSettings,
    train="tests.echo_trainer:echo_train",
    evaluate="tests.echo_trainer:echo_evaluate",
    description="A test trainer.",
    holds="started_from.txt",
    preflight="tests.echo_trainer:echo_preflight",
    starts_from="sft",
)
