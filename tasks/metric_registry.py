"""What each metric means, declared once, where it is computed.

Modelled on lm-evaluation-harness's `register_metric(metric=..., higher_is_better=...,
aggregation=...)` (lm_eval/api/registry.py): the module that computes a figure declares it
at import with `register_metric`, and every reader takes the figure's meaning from the
declaration, never from its name. The catalog's `metrics` rows carry the declared meaning
(`direction`, `kind`, `unit`, `question`, `baseline_metric`), written where the row is
produced (`meaning`), so the forgetting views (storage/forgetting.py), the events' regression
rule (tasks/events.py), the report's plot and the run's summary read it from the row.

A name no declaration matches is an error where the row is produced (`UndeclaredMetric`),
not a row that silently drops out of forgetting. Names with a parameter are templates:
`top{k}_accuracy` matches `top5_accuracy`; `{checker}` matches any checker name. A
declaration's `baseline` is the template of the figure it is comparable to, filled with
the same parameters (`{checker}_pass@{k}` -> `baseline_{checker}_pass@{k}`).

>>> m = meaning("baseline_repl_pass@8")
>>> m["direction"], m["kind"], m["question"], m["baseline_metric"]
('higher', 'baseline', None, None)
>>> meaning("top5_accuracy")["baseline_metric"], meaning("top1_accuracy")["baseline_metric"]
(None, 'top1_majority_baseline')
>>> meaning("no_such_thing")
Traceback (most recent call last):
...
tasks.metric_registry.UndeclaredMetric: metric 'no_such_thing' is not declared: declare it with tasks.metric_registry.register_metric where it is computed
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Direction = Literal["higher", "lower"]
# score: a skill of the model; baseline: the same skill of a reference that is no trained model;
# count: a size (theorems, examples); cost: seconds, tokens; diagnostic: a training figure that is no skill.
Kind = Literal["score", "baseline", "count", "cost", "diagnostic"]
# Which question a reader asks of the figure; the report's plot has one panel per question
# (forgetting is the learning figures read on repositories learned at earlier steps).
Question = Literal["learning", "proving"]
QUESTIONS = ("learning", "forgetting", "proving")


class UndeclaredMetric(ValueError):
    """A metric row whose name no `register_metric` declaration matches."""


@dataclass(frozen=True)
class MetricDef:
    """One declared metric (a template of names)."""

    template: str  # the name, `{k}`/`{checker}`-style parameters for a family
    direction: Direction | None  # which way is better; None: not a skill (never forgotten, never regresses)
    kind: Kind
    unit: str  # "share" (0..1), "correlation" (-1..1), "nats/token", "steps", "steps^2", "theorems", "seconds", ...
    question: Question | None = None  # the plot's panel; None: in the tables only
    baseline: str | None = None  # the template of the figure this one is compared with, if any
    description: str = ""
    alias_of: str | None = None  # `{metric}`: the same figure as the declared one it names, renamed

    def pattern(self) -> re.Pattern:
        parts = re.split(r"\{(\w+)\}", self.template)
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        return re.compile(regex)


_METRICS: dict[str, MetricDef] = {}


def register_alias(template: str, of: str = "{metric}") -> MetricDef:
    """Declare a family of renamed figures: `register_alias("sampled_{metric}")` makes
    `sampled_X` mean what `X` means, its baseline `sampled_<X's baseline>`."""
    return register_metric(template, direction=None, kind="score", unit="", alias_of=of)


def register_metric(template: str, **fields) -> MetricDef:
    """Declare a metric (or replace the declaration of the same template); returns it."""
    d = MetricDef(template, **fields)
    if d.alias_of is not None:
        _METRICS[template] = d
        return d
    if d.direction is None and d.kind in ("score", "baseline"):
        raise ValueError(f"metric {template!r}: a {d.kind} needs a direction")
    if d.question is not None and d.direction is None:
        raise ValueError(f"metric {template!r}: a figure without a direction answers no question")
    _METRICS[template] = d
    return d


def unregister_metric(template: str) -> None:
    """Remove a declaration (tests that declare metrics of their own)."""
    _METRICS.pop(template, None)


def declarations() -> dict[str, MetricDef]:
    return dict(_METRICS)


# Modules that declare metrics: these, and each registered trainer's evaluation module (the
# trainer registry names it with `declared_in`). A reader (a cached evaluation's rows, the report
# of an older run) finds every declaration after `load_all`; nothing here imports a trainer.
DECLARING_MODULES = ["tasks.search.pass_at_k", "tasks.proving.evaluate", "tasks.expert.rounds"]


def declared_in(module: str) -> None:
    """Say that `module` declares metrics (imported by `load_all` before a name is called undeclared)."""
    if module not in DECLARING_MODULES:
        DECLARING_MODULES.append(module)


def load_all() -> None:
    """Import every module that declares metrics (DECLARING_MODULES)."""
    import importlib

    for module in list(DECLARING_MODULES):
        importlib.import_module(module)


def declared(name: str) -> tuple[MetricDef, dict[str, str]]:
    """The declaration `name` matches and its parameters; exact templates win over families."""
    found = _match(name)
    if found is None:
        load_all()  # declared in a module not imported yet
        found = _match(name)
    if found is None:
        raise UndeclaredMetric(
            f"metric {name!r} is not declared: declare it with tasks.metric_registry.register_metric where it is computed"
        )
    return found


def _match(name: str) -> tuple[MetricDef, dict[str, str]] | None:
    if name in _METRICS:
        return _METRICS[name], {}
    # the most specific family first: `baseline_{checker}_pass@{k}` before `{checker}_pass@{k}`
    for d in sorted(_METRICS.values(), key=lambda d: -len(re.sub(r"\{\w+\}", "", d.template))):
        found = d.pattern().fullmatch(name)
        if found:
            return d, found.groupdict()
    return None


def parameters(name: str) -> dict[str, str]:
    """The parameters a metric's name fills in its declaration (`repl_pass@4` -> checker repl,
    k 4), through aliases; {} for a name no module declares."""
    try:
        d, params = declared(name)
    except UndeclaredMetric:
        return {}
    return parameters(d.alias_of.format(**params)) if d.alias_of is not None else params


def meaning(name: str) -> dict:
    """The columns a metric row carries for `name` (raises UndeclaredMetric)."""
    d, params = declared(name)
    if d.alias_of is not None:
        inner = meaning(d.alias_of.format(**params))
        renamed = inner["baseline_metric"] and d.template.format(**{**params, "metric": inner["baseline_metric"]})
        return {**inner, "baseline_metric": renamed or None}
    return {
        "direction": d.direction,
        "kind": d.kind,
        "unit": d.unit,
        "question": d.question,
        "baseline_metric": d.baseline.format(**params) if d.baseline else None,
    }


def with_meaning(row: dict) -> dict:
    """`row` with its metric's declared meaning (raises UndeclaredMetric)."""
    return {**row, **meaning(row["metric"])}


MEANING = ("direction", "kind", "unit", "question", "baseline_metric")  # the columns `meaning` gives


def below_baseline(row: dict, baseline: dict | None) -> bool:
    """Whether a figure is worse than its baseline's (same repository, split and step), in its
    declared direction. Only a whole interval beyond the baseline's value counts where one exists.

    >>> below_baseline({"value": 0.2, "direction": "higher"}, {"value": 0.3})
    True
    >>> below_baseline({"value": 0.2, "ci_high": 0.4, "direction": "higher"}, {"value": 0.3})
    False
    """
    if baseline is None or baseline.get("value") is None or row.get("value") is None:
        return False
    if row.get("direction") == "higher":
        top = row.get("ci_high") if row.get("ci_high") is not None else row["value"]
        return top < baseline["value"]
    if row.get("direction") == "lower":
        bottom = row.get("ci_low") if row.get("ci_low") is not None else row["value"]
        return bottom > baseline["value"]
    return False


def baselines_of(rows: list[dict]) -> dict[int, dict]:
    """For each row (by its index) with a declared baseline, that baseline's row: the same step,
    trainer, checkpoint, repository, split kind and split."""
    key = ("step", "trainer", "checkpoint_id", "repo_id", "split_kind", "split")
    by = {(tuple(r.get(k) for k in key), r["metric"]): r for r in rows}
    out = {}
    for i, r in enumerate(rows):
        name = r.get("baseline_metric")
        if name and (found := by.get((tuple(r.get(k) for k in key), name))) is not None:
            out[i] = found
    return out


def read_meaning(rows: list[dict]) -> list[dict]:
    """Rows read back from the catalog, each with its declared meaning; a row recorded before the
    meaning columns existed gains it from the declaration, where its metric is still declared."""
    out = []
    for r in rows:
        if r.get("kind") is None:
            try:
                r = with_meaning(r)
            except UndeclaredMetric:
                pass  # an old row of a metric no module declares any more: shown, never plotted or forgotten
        out.append(r)
    return out


def is_size(row: dict) -> bool:
    """A count or a cost (theorems, examples, seconds, tokens): in the tables, never plotted or summarised."""
    return row.get("kind") in ("count", "cost")
