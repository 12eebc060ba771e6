"""Which trainers exist: the one place a trainer is registered (one line each, at the end).

The config's `trainers:` section, preflight, checkpoint manifests and the curriculum's
trainer order all read this registry. Declarations hold import strings for the
heavy parts, so importing the registry imports no torch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from storage.errors import InputError, one_of
from tasks.metric_registry import declared_in

from .base import TrainerDef

_TRAINERS: dict[str, TrainerDef] = {}
_listeners: list[Callable[[], None]] = []


def register(trainer: TrainerDef) -> TrainerDef:
    """Add `trainer` (or replace the one of the same name); the config follows at once."""
    if not trainer.name.isidentifier():
        raise ValueError(f"trainer name {trainer.name!r} must be an identifier (it is a config key)")
    _TRAINERS[trainer.name] = trainer
    declared_in(trainer.evaluate.partition(":")[0])  # its evaluation declares its metrics (tasks/metric_registry.py)
    for listener in _listeners:
        listener()
    return trainer


def unregister(name: str) -> None:
    """Remove a trainer (tests that register one of their own)."""
    _TRAINERS.pop(name, None)
    for listener in _listeners:
        listener()


def on_change(listener: Callable[[], None]) -> None:
    """Call `listener` after every (un)registration (`tasks.config` rebuilds its `trainers:` model)."""
    _listeners.append(listener)


def trainers() -> dict[str, TrainerDef]:
    """Every registered trainer, in registration order."""
    return dict(_TRAINERS)


def get(name: str) -> TrainerDef:
    return one_of(_TRAINERS, name, "a registered trainer", where="trainer")


def tactic_generators() -> tuple[str, ...]:
    """The trainers whose checkpoints generate tactics (`TrainerDef.generates_tactics`), in registration order."""
    return tuple(n for n, d in _TRAINERS.items() if d.generates_tactics)


def training_order(settings_by_name: dict[str, object]) -> list[str]:
    """The enabled trainers in the order they train at a step: a trainer that starts from
    another's checkpoint comes after it; otherwise registration order. Raises InputError
    when the trainer it starts from is not enabled, or the dependencies form a cycle."""
    names = [n for n in _TRAINERS if n in settings_by_name]
    deps = {}
    for n in names:
        start = get(n).start_of(settings_by_name[n])
        if start is not None and start not in settings_by_name:
            raise InputError(
                f"trainers.{n}",
                f"starts from the checkpoint of trainer {start!r}, which is off",
                f"enable trainers.{start} too (or start {n} from its base model)",
            )
        deps[n] = start
    ordered: list[str] = []

    def visit(n: str, path: tuple[str, ...]) -> None:
        if n in ordered:
            return
        if n in path:
            raise InputError(
                f"trainers.{n}", f"starts from itself through {' -> '.join((*path, n))}", "remove one starts_from"
            )
        if deps[n] is not None:
            visit(deps[n], (*path, n))
        ordered.append(n)

    for n in names:
        visit(n, ())
    return ordered


def _register_builtin(refs: Iterable[str]) -> None:
    from .base import load_object

    for ref in refs:
        register(load_object(ref))


# -- the trainers: one line each ----------------------------------------------------------
_register_builtin(
    [
        "tasks.sft.trainer:TRAINER",
        "tasks.retriever.trainer:TRAINER",
        "tasks.progress.trainer:TRAINER",
        "tasks.grpo.trainer:TRAINER",
        "tasks.sft_proof.trainer:TRAINER",
    ]
)
