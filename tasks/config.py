"""`PipelineConfig`: everything a curriculum run needs, as one pydantic model.

It is the flow's parameter (the Prefect UI renders it as a form), and it loads
from YAML for `dojoflow run CONFIG.yaml`, so the UI, the CLI and YAML agree.
Unknown fields and wrong types are errors that name the field.

    dojoflow run examples/sample.yaml
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from storage.errors import InputError
from storage.sample import SAMPLE_REPOS
from storage.snapshot import SnapshotSettings
from storage.splits import SplitSettings
from storage.statement_sets.reader import StatementSetConfig
from tasks.evaluations import EVALUATIONS
from tasks.git import refuse_credentials
from tasks.trainers import registry
from tasks.trainers.launch import LaunchSettings
from tasks.yaml_config import load_yaml_mapping, resolve_local

from .benchmarks import BenchmarkConfig
from .expert.config import ExpertIterationSettings

log = logging.getLogger(__name__)


class SourceConfig(BaseModel):
    """One place repositories come from: a LeanDojo export, a Lean 4 repository to trace,
    or one of the sample repositories that ship with Dojoflow."""

    model_config = ConfigDict(extra="forbid")

    export: Optional[str] = Field(
        None, min_length=1, description="Path of a LeanDojo Benchmark export folder to import."
    )
    repo: Optional[str] = Field(
        None, min_length=1, description="A git URL or a local path of a Lean 4 repository to trace with lean-dojo."
    )
    commit: Optional[str] = Field(
        None,
        description="Commit of `repo` to trace (default: HEAD of the local repo or the remote's default branch, read when the run starts).",
    )
    sample: Optional[Literal[SAMPLE_REPOS]] = Field(
        None,
        description="A sample repository that ships with Dojoflow, imported from its LeanDojo export (no Lean needed).",
    )
    name: Optional[str] = Field(None, description="A label for reports (default: the repository's name).")

    @field_validator("repo")
    @classmethod
    def _no_credentials(cls, v: Optional[str]) -> Optional[str]:
        # An InputError, not a ValueError: pydantic's error dump would quote the secret.
        return v if v is None else refuse_credentials(v, "sources[].repo")

    @model_validator(mode="after")
    def _one_kind(self):
        if sum(v is not None for v in (self.export, self.repo, self.sample)) != 1:
            raise ValueError(
                "give exactly one of `export` (a LeanDojo export folder), `repo` (a Lean repository "
                f"to trace) or `sample` (one of {', '.join(SAMPLE_REPOS)})"
            )
        if self.commit is not None and self.repo is None:
            raise ValueError("`commit` goes with `repo`; an export carries its own commits")
        return self

    @property
    def export_path(self) -> Optional[str]:
        """The export folder to import: `export`, or the shipped sample's (resolved here, at run
        time, so a deployment's parameters name no path of the machine that deployed it)."""
        if self.sample is not None:
            from storage.sample import SAMPLE_ROOT

            return str(SAMPLE_ROOT / "leandojo" / self.sample)
        return self.export

    @property
    def label(self) -> str:
        return self.name or self.sample or Path((self.export or self.repo).rstrip("/")).name


def sample_sources() -> list[SourceConfig]:
    return [SourceConfig(sample=name) for name in SAMPLE_REPOS]


class _TrainersBase(BaseModel):
    """Which trainers run at each curriculum step, with their settings (null = off).

    One field per registered trainer (tasks/trainers/registry.py), built from its
    declaration, so adding a trainer needs no edit here."""

    model_config = ConfigDict(extra="forbid")

    def enabled(self) -> dict[str, BaseModel]:
        """Settings of the enabled trainers, in the order they train at a step (a trainer
        that starts from another's checkpoint after it)."""
        on = {name: getattr(self, name) for name in type(self).model_fields if getattr(self, name) is not None}
        return {name: on[name] for name in registry.training_order(on)}


def _trainers_model() -> type[_TrainersBase]:
    fields = {}
    for name, d in registry.trainers().items():
        default = (
            Field(default_factory=d.settings, description=d.description)
            if d.enabled_by_default
            else Field(None, description=d.description)
        )
        fields[name] = (Optional[d.settings], default)
    return create_model("TrainersConfig", __base__=_TrainersBase, __module__=__name__, **fields)


TrainersConfig = _trainers_model()


class TracingConfig(BaseModel):
    """How `repo` sources are traced with lean-dojo (tasks/tracing/trace.py)."""

    model_config = ConfigDict(extra="forbid")

    num_procs: Optional[int] = Field(
        None,
        ge=1,
        le=512,
        description="lean-dojo's parallelism (its NUM_PROCS): lower it when tracing a large repository runs out of memory. Default: the CPU count, at most 32.",
    )
    timeout_s: Optional[float] = Field(
        None, gt=0, description="Give up on a trace after this many seconds (default: no limit)."
    )
    build_deps: bool = Field(
        True,
        description="Also trace the repository's dependencies (lean-dojo's build_deps), so their premises are in the corpus.",
    )
    extra_pythonpath: list[str] = Field(
        default_factory=list,
        description="Folders to put on the tracing worker's PYTHONPATH, where lean-dojo is installed if it is not in Dojoflow's environment.",
    )

    @field_validator("build_deps")
    @classmethod
    def _needs_the_file_graph(cls, build_deps: bool) -> bool:
        from tasks.tracing.job import check_build_deps

        try:
            check_build_deps(build_deps)
        except InputError as e:
            raise ValueError(str(e)) from None
        return build_deps


class _EvaluationBase(BaseModel):
    """What is evaluated after each step."""

    model_config = ConfigDict(extra="forbid")

    splits: list[Literal["train", "val", "test"]] = Field(
        ["train", "val", "test"],
        min_length=1,
        description="Splits to evaluate on, for every repository seen so far (`train` shows what was learned; "
        "val and test, what generalises).",
    )
    all_repositories_so_far: bool = Field(
        True, description="Evaluate on every repository seen so far (shows forgetting), not only the newest."
    )
    regression_margin: float = Field(
        0.0,
        ge=0,
        description="How much worse than its 95% interval when learned (in the metric's own units) a metric on an "
        "earlier repository may get before the step emits `dojoflow.metric.regressed` (docs/operations.md); "
        "0: any value beyond that interval.",
    )


# One optional section per declared step evaluation (tasks/evaluations.py), null (off) by default.
EvaluationConfig = create_model(
    "EvaluationConfig",
    __base__=_EvaluationBase,
    __doc__=_EvaluationBase.__doc__,
    **{e.name: (Optional[e.settings], Field(None, description=e.description)) for e in EVALUATIONS},
)


class PipelineConfig(BaseModel):
    """A curriculum run: sources, data settings, trainers, evaluation and where it lives."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field("sample", description="A name for this pipeline, shown in run names and reports.")
    home: Optional[str] = Field(
        None, description="Dojoflow home (store, checkpoints, Prefect results). Default: $DOJOFLOW_HOME or ./.dojoflow."
    )
    sources: list[SourceConfig] = Field(
        default_factory=sample_sources,
        description="Where repositories come from. Default: the sample that ships with Dojoflow.",
    )
    split_kind: Literal["random", "novel_premises"] = Field(
        "random", description="Which split kind to train and evaluate on."
    )
    splits: SplitSettings = Field(
        default_factory=SplitSettings,
        description="How theorems of traced repositories are assigned to splits at ingestion.",
    )
    snapshot: SnapshotSettings = Field(
        default_factory=SnapshotSettings, description="What each step's merged dataset keeps."
    )
    order: Literal["curriculum", "as_given"] = Field(
        "curriculum",
        description="`curriculum`: easiest repository first (LeanAgent's rule); `as_given`: the order of `sources`.",
    )
    max_steps: Optional[int] = Field(
        None, ge=1, description="Stop after this many curriculum steps (default: one per source)."
    )
    trainers: TrainersConfig = Field(default_factory=TrainersConfig, description="Trainers to run at each step.")
    evaluation: EvaluationConfig = Field(default_factory=EvaluationConfig, description="Evaluation after each step.")
    benchmarks: list[BenchmarkConfig] = Field(
        default_factory=list,
        description="Evaluation sets kept out of training: their statements and near-copies leave every snapshot, "
        "with the reason, and a contamination report is written per snapshot (docs/evaluation.md).",
    )
    statements: list[StatementSetConfig] = Field(
        default_factory=list,
        description="Statement sets imported into the store when the run starts (docs/statement-sets.md): a file, "
        "folder or hub id with a preset or column mapping; `benchmark: true` keeps a set out of every training.",
    )
    expert_iteration: Optional[ExpertIterationSettings] = Field(
        None,
        description="Expert iteration inside each step: search the train split with the step's tactic "
        "generator, keep the proofs the verifier accepts, train on them, repeat (docs/expert-iteration.md). "
        "null: off.",
    )
    tracing: TracingConfig = Field(default_factory=TracingConfig, description="How `repo` sources are traced.")
    continue_on_source_failure: bool = Field(
        False, description="If a source fails to import or trace, go on with the others (its error is in the report)."
    )
    result_storage: Optional[str] = Field(
        None,
        description="A Prefect storage block, `<block type slug>/<block name>` (a local-file-system block on a "
        "shared mount, a remote-file-system block on s3:// or gs://), where the steps' cached task results and "
        "their cache records live, so several machines share one cache. Default: under the home "
        "(<home>/prefect/results). The catalog and the locks stay under the home (docs/operations.md).",
    )
    launch: LaunchSettings = Field(
        default_factory=LaunchSettings,
        description="How training steps are launched (processes per node, nodes, rendezvous, python, env): the "
        "default of every trainer whose own `launch` is null (docs/scaling.md).",
    )

    @model_validator(mode="after")
    def _trainers_launch_by_default(self):
        """A trainer without its own `launch:` takes the pipeline's (each step's task gets it in its settings)."""
        for name in type(self.trainers).model_fields:
            settings = getattr(self.trainers, name)
            if settings is not None and getattr(settings, "launch", 0) is None and self.launch != LaunchSettings():
                setattr(self.trainers, name, settings.model_copy(update={"launch": self.launch}))
        return self

    @classmethod
    def from_yaml(cls, path: str | Path) -> "PipelineConfig":
        path = Path(path)
        raw = resolve_paths(load_yaml_mapping(path, "examples/sample.yaml"), path.parent.resolve())
        try:
            return cls.model_validate(raw)
        except ValidationError as e:
            raise InputError(
                path,
                first_error(e),
                "fix the field (`dojoflow config --schema` lists every field and its meaning; examples/ show valid configs)",
            ) from e

    def with_overrides(self, overrides: dict, source: str) -> "PipelineConfig":
        """A copy with `overrides` applied and validated like the rest (model_copy would not)."""
        try:
            return type(self).model_validate({**self.model_dump(), **overrides})
        except ValidationError as e:
            raise InputError(source, first_error(e), "fix the value") from e

    def validate_for_run(self, warn=None) -> dict[str, BaseModel]:
        """Checks that need more than types (trainers' settings, paths); before any training.
        `warn(line)` is told what is suspect but not wrong (a benchmark repeating another's statements)."""
        for i, s in enumerate(self.sources):
            if s.export_path is not None and not Path(s.export_path).is_dir():
                raise InputError(
                    f"sources[{i}].export", f"{s.export_path} is not a folder", "give the path of a LeanDojo export"
                )
        if not self.sources:
            raise InputError("sources", "is empty", "list at least one export or repository")
        # Files first: the trainers' checks below import torch/TRL (minutes on a loaded machine).
        if self.benchmarks:  # a benchmark file that does not parse fails here, before anything is written
            from .benchmarks import load_benchmarks

            for line in load_benchmarks(self.benchmarks)[1]:
                (warn or log.warning)(line)
        proving = self.evaluation.proving
        declared = {b.name for b in self.benchmarks} | {st.set_name() for st in self.statements if st.benchmark}
        undeclared = [n for n in (proving.benchmarks if proving else []) if n not in declared]
        if undeclared:
            raise InputError(
                "evaluation.proving.benchmarks",
                f"names {', '.join(undeclared)}, which the `benchmarks:` section does not declare",
                "declare each under `benchmarks:` (name and path) or as a `statements:` set with `benchmark: true`, "
                "or remove it from `evaluation.proving.benchmarks`",
            )
        from .trainers.preflight import quick_checks, trainer_checks
        from .valid_args_memo import memo_under

        enabled = self.trainers.enabled()  # refuses a trainer that starts from one that is off
        for evaluation in EVALUATIONS:  # e.g. a proving backend that cannot run fails before any training
            settings = getattr(self.evaluation, evaluation.name)
            if settings is not None:
                evaluation.check(settings)
        if self.expert_iteration is not None:
            self.expert_search()  # refuses a search it cannot run, before any training
        for name, settings in enabled.items():  # every trainer's quick checks before any imports torch/TRL
            quick_checks(name, settings)
        with memo_under(self.home):  # checks that passed are remembered under the run's home
            for name, settings in enabled.items():
                trainer_checks(name, settings)
        return enabled

    def expert_search(self):
        """The proving settings of expert iteration's search: its own `search`, else `evaluation.proving`'s."""
        ei = self.expert_iteration
        search = ei.search or self.evaluation.proving
        field = "expert_iteration.search" if ei.search is not None else "evaluation.proving"
        if search is None:
            raise InputError(
                "expert_iteration.search", "is not set and neither is evaluation.proving", "give one of them"
            )
        from tasks.lean.registry import of

        if of(search.backend).lower_bound:
            raise InputError(
                f"{field}.backend.kind",
                f"is {search.backend.kind}, which cannot verify a proof (it accepts only traced steps)",
                "set `expert_iteration.search` with a repl, kimina or leandojo (recheck) backend",
            )
        if ei.trainer not in self.trainers.enabled():
            raise InputError(
                "expert_iteration.trainer", f"{ei.trainer} is not enabled", f"enable trainers.{ei.trainer}"
            )
        if ei.search is not None:
            from .evaluations import check_proving

            check_proving(search, field)
        return search


def resolve_paths(raw: dict, base: Path) -> dict:
    """A config mapping read from a file in `base`, with relative local paths made absolute:
    sources' `export`/`repo`, and trainers' base models that are folders beside the file.
    Parts of the wrong shape are left for validation to name."""
    sources = raw.get("sources")
    for s in sources if isinstance(sources, list) else []:
        if isinstance(s, dict):
            for key in ("export", "repo"):
                if key in s:
                    s[key] = resolve_local(s[key], base)
    trainers = raw.get("trainers")
    known = registry.trainers()
    for name, settings in trainers.items() if isinstance(trainers, dict) else []:
        if isinstance(settings, dict) and name in known:
            for key in known[name].model_fields:
                if key in settings:
                    settings[key] = resolve_local(settings[key], base, must_exist=True)
    for st in raw.get("statements") if isinstance(raw.get("statements"), list) else []:
        if isinstance(st, dict) and isinstance(st.get("path"), str) and (base / st["path"]).exists():
            st["path"] = str((base / Path(st["path"]).expanduser()).resolve())
    benchmarks = raw.get("benchmarks")
    for b in benchmarks if isinstance(benchmarks, list) else []:
        if isinstance(b, dict) and isinstance(b.get("path"), str):
            b["path"] = str((base / Path(b["path"]).expanduser()).resolve())
    return raw


def _rebuild_trainers() -> None:
    """A trainer was (un)registered: the `trainers:` section follows."""
    global TrainersConfig
    TrainersConfig = _trainers_model()
    field = PipelineConfig.__pydantic_fields__["trainers"]
    field.annotation, field.default_factory = TrainersConfig, TrainersConfig
    PipelineConfig.model_rebuild(force=True)


registry.on_change(_rebuild_trainers)


def first_error(e: ValidationError) -> str:
    errs = e.errors()
    parts = []
    for err in errs[:3]:
        loc = ".".join(str(x) for x in err["loc"]) or "config"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "is not a known field"
        parts.append(f"`{loc}` {msg}")
    more = f" (and {len(errs) - 3} more)" if len(errs) > 3 else ""
    return "; ".join(parts) + more


def prove_config_from_yaml(path):
    """The ProveConfig of `dojoflow prove` (tasks/proving/sorry.py `prove_config`'s `read`) from a prove
    config, or a pipeline config: its `home` and `evaluation.proving` are used. Here, at the root, because
    it reads a pipeline config: nothing the pipeline config imports (tasks/proving/ included) imports it."""
    from .proving.config import ProveConfig

    raw = load_yaml_mapping(path, "examples/proving.yaml")
    if not (isinstance(raw, dict) and {"evaluation", "trainers", "sources"} & set(raw)):
        return ProveConfig.from_yaml(path)
    pipeline = PipelineConfig.from_yaml(path)  # a pipeline config, validated as one
    if pipeline.evaluation.proving is None:
        raise InputError(path, "has no `evaluation.proving` section", "add one (see examples/proving.yaml)")
    # its benchmarks are the curriculum's evaluation sets: `dojoflow prove` tries `sorry` theorems
    return ProveConfig(home=pipeline.home, proving=pipeline.evaluation.proving.model_copy(update={"benchmarks": []}))
