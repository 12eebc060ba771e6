"""`ProvingSettings` (the `evaluation.proving` section of a pipeline config, and the body of
a `dojoflow prove` config) and `ProveConfig` (what `dojoflow prove` / the `prove` flow take).
See docs/proving.md."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from storage.errors import InputError
from tasks.generate.config import GeneratorSettings
from tasks.lean.config import BackendSettings


class ProvingSettings(BaseModel):
    """How a tactic generator's checkpoint tries theorems: backend, generator, search budgets, pass@k."""

    model_config = ConfigDict(extra="forbid")

    backend: BackendSettings = Field(
        default_factory=BackendSettings,
        description="The Lean backend that checks tactics and proofs (tasks/lean/config.py). `replay` needs no Lean and is labelled `replay` in every metric.",
    )
    generator: GeneratorSettings = Field(
        default_factory=GeneratorSettings,
        description="Where tactics come from: the step's checkpoint (default), retrieval-augmented, or an OpenAI-compatible endpoint.",
    )
    mode: Literal["best_first", "whole_proof"] = Field(
        "best_first",
        description="`best_first`: ReProver's search over tactic states; `whole_proof`: sample `num_tactics` complete proofs per attempt and check each.",
    )
    num_tactics: int = Field(
        8,
        ge=1,
        le=1024,
        description="Tactics generated per expanded state (best_first), or proofs sampled per attempt (whole_proof).",
    )
    max_expansions: Optional[int] = Field(
        32, ge=1, description="States expanded per search at most (null: only the time budget limits it)."
    )
    timeout_s: float = Field(60.0, gt=0, description="Wall-clock seconds per search of one theorem.")
    attempts: int = Field(
        1,
        ge=1,
        le=1024,
        description="Independent searches per theorem (best_first; each with its own sampling seed). pass@k needs at least k attempts; whole_proof counts every sampled proof as an attempt.",
    )
    k: int = Field(
        1,
        ge=1,
        description="pass@k is reported for this k (and pass@1), with the unbiased estimator of Chen et al. 2021.",
    )
    splits: list[Literal["train", "val", "test"]] = Field(
        ["test"], description="Splits whose theorems are tried, for every repository seen so far."
    )
    max_theorems: Optional[int] = Field(
        20,
        ge=1,
        description="Theorems per repository and split at most (a fixed hash chooses them, so steps try the same ones); null: all.",
    )
    benchmarks: list[str] = Field(
        default_factory=list,
        description="Names of the pipeline's `benchmarks:` to try as well, each as its own group (repository "
        "`benchmark:NAME`, split `benchmark`) whose rows carry the benchmark's fingerprint. Replay tries a benchmark "
        "statement only through a store theorem with the same statement fingerprint (its traced proof); the others "
        "are counted as untried, with the reason. A benchmark is tried whole (`max_theorems` does not cap it) "
        "(docs/evaluation.md).",
    )
    batch_size: int = Field(
        8,
        ge=1,
        le=10000,
        description="Theorems per Prefect task: the unit a task runner (threads, Dask, Ray) spreads over workers.",
    )
    seed: int = Field(0, description="Sampling seed of attempt 0; attempt i uses seed + i.")

    @property
    def samples_per_theorem(self) -> int:
        """n of pass@k: attempts, times the proofs each samples in whole-proof mode."""
        return self.attempts * (self.num_tactics if self.mode == "whole_proof" else 1)

    @model_validator(mode="after")
    def _check(self):
        n = self.samples_per_theorem
        if self.k > n:
            raise ValueError(
                f"k={self.k} needs at least {self.k} attempts per theorem, but {n} are made: raise "
                f"`attempts` (best_first) or `num_tactics` (whole_proof), or lower `k`"
            )
        if self.attempts > 1 and self.generator.decoding == "beam" and self.generator.kind != "endpoint":
            raise ValueError(
                f"attempts={self.attempts} with beam decoding would repeat one search: set "
                "`generator.decoding: sample`, or `attempts: 1`"
            )
        return self


class ProveConfig(BaseModel):
    """`dojoflow prove`: try every `sorry` theorem of the chosen repositories with a tactic generator."""

    model_config = ConfigDict(extra="forbid")

    home: Optional[str] = Field(
        None, description="Dojoflow home (store, checkpoints). Default: $DOJOFLOW_HOME or ./.dojoflow."
    )
    repos: list[str] = Field(
        default_factory=list,
        description="Repositories to prove in (repo id, URL or URL@COMMIT, or a repository name); empty: every repository in the store.",
    )
    theorems: list[str] = Field(
        default_factory=list,
        description="Only these `sorry` theorems (full names); empty: every `sorry` theorem of `repos`.",
    )
    checkpoint: Optional[str] = Field(
        None,
        description="The tactic generator's checkpoint folder. Default: the newest SFT checkpoint in the catalog (not needed with an endpoint generator).",
    )
    proving: ProvingSettings = Field(
        default_factory=lambda: ProvingSettings(backend=BackendSettings(kind="repl")),
        description="Backend, generator and budgets (as `evaluation.proving`; the default backend here is the Lean REPL).",
    )
    out: Optional[str] = Field(
        None, description="Folder for the patch files (one per repository). Default: <home>/patches/<run id>/."
    )

    @model_validator(mode="after")
    def _no_benchmarks(self):
        if self.proving.benchmarks:
            raise ValueError(
                f"proving.benchmarks={self.proving.benchmarks} has no meaning here: `dojoflow prove` tries `sorry` "
                "theorems; evaluate on a benchmark with `evaluation.proving.benchmarks` in a pipeline config"
            )
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> "ProveConfig":
        """A prove config. A pipeline config's `evaluation.proving` is read by
        `tasks.config.prove_config_from_yaml` (the pipeline config is the root: nothing
        it imports, this module included, imports it)."""
        from tasks.yaml_config import load_yaml_mapping

        raw = load_yaml_mapping(path, "examples/proving.yaml")
        try:
            return cls.model_validate(raw or {})
        except ValidationError as e:
            err = e.errors()[0]
            loc = ".".join(str(x) for x in err["loc"]) or "config"
            raise InputError(path, f"`{loc}` {err['msg']}", "fix the field (docs/proving.md lists them)") from e
