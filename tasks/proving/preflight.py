"""Checks a proving run makes before any search: the backend can run, the checkpoint is a
tactic generator, an endpoint answers like one. Each failure is a clear error."""

from __future__ import annotations

from pathlib import Path

from storage.errors import InputError

from .config import ProvingSettings
from .records import TheoremToTry


def check_proving(
    store, settings: ProvingSettings, checkpoint_dir: str | None, theorems: list[TheoremToTry] = ()
) -> None:
    """Raise a clear error if the backend cannot run (on these theorems' checkouts), or the
    generator cannot generate; starts no search."""
    from tasks.generate.checkpoint import check_causal_lm, checkpoint_prompt_settings
    from tasks.lean import preflight

    from .evaluate import spec_of

    preflight(settings.backend, [spec_of(t) for t in theorems])
    gen = settings.generator
    if gen.kind == "endpoint":
        from tasks.generate.endpoint import EndpointGenerator

        EndpointGenerator.open(gen.endpoint, gen).close()  # a probe request: garbage fails here
    else:
        if checkpoint_dir is None:
            raise InputError(
                "checkpoint", "is not given", "give a tactic generator's checkpoint, or use an endpoint generator"
            )
        path = Path(checkpoint_dir)
        if not path.is_dir():
            raise InputError(path, "does not exist", "give a tactic generator's checkpoint folder")
        checkpoint_prompt_settings(path)
        check_causal_lm(path)
    for name in ("retriever_checkpoint", "progress_checkpoint"):
        value = getattr(gen, name)
        if value and not Path(value).is_dir():
            raise InputError(f"generator.{name}", f"{value} is not a folder", "give the checkpoint's folder")
