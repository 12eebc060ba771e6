"""Proving the `sorry` theorems of a repository (`dojoflow prove`, flows/prove.py).

The store marks a theorem whose traced proof uses `sorry` or `admit` (`theorems.has_sorry`);
each is searched from its statement, proofs go to the `proofs` table (purpose `sorry`),
and tasks/proving/patches.py writes one checked patch per repository.
"""

from __future__ import annotations

from pathlib import Path

from storage.errors import InputError
from storage.repo_specs import resolve_repositories

from .evaluate import initial_goals, theorem_to_try
from .generator_ref import GeneratorRef
from .records import SearchRecord, TheoremToTry, Untried


def select_sorry_theorems(
    store, repo_ids: list[str], full_names: list[str] | None = None, settings=None, untried: list | None = None
) -> list[TheoremToTry]:
    """Records (as evaluation's) of the theorems of `repo_ids` whose proof uses `sorry`
    (only `full_names`, if given: each must be in the store and be a `sorry` theorem).
    With `settings` (ProvingSettings), a statement is looked for where its backend can read
    one; each `sorry` theorem it cannot try goes to `untried` (`Untried`), and when none can be tried it fails naming them and why."""
    from tasks.lean import load_theorems

    from .evaluate import statement_needs
    from .summary import untried_sentence

    need_statement, projects = statement_needs(settings) if settings is not None else (True, None)
    unstated: list[dict[str, str | None]] = []
    specs = load_theorems(
        store, repo_ids, sorry_only=True, need_statement=need_statement, projects=projects, untried=unstated
    )
    cannot = [Untried.in_store(u) for u in unstated]
    if full_names:
        load_theorems(store, repo_ids, full_names=list(full_names))  # InputError for a theorem not in the store
        proved_already = sorted(set(full_names) - {s.full_name for s in specs} - {u.full_name for u in cannot})
        if proved_already:
            raise InputError(
                ", ".join(proved_already),
                "has a proof without `sorry` in the store",
                'name theorems whose proof is `sorry` (`dojoflow sql "SELECT full_name FROM theorems '
                'WHERE has_sorry"`)',
            )
        specs = [s for s in specs if s.full_name in set(full_names)]
        cannot = [u for u in cannot if u.full_name in set(full_names)]
    if not specs and cannot:
        raise InputError(
            "prove",
            f"no `sorry` theorem can be tried: {untried_sentence(cannot)}",
            "configure the repositories' checkouts (`backend.repl.projects`), or trace them again with lean-dojo",
        )
    if untried is not None:
        untried.extend(cannot)
    goals = initial_goals(store, repo_ids)
    return [theorem_to_try(s, None, goals.get((s.repo_id, s.file_path, s.full_name), "")) for s in specs]


def prove_inputs(store, repos: list[str], theorems: list[str], checkpoint: str | None, settings):
    """(the `sorry` theorems to try, the generator, the `sorry` theorems that cannot be tried,
    each with its reason) of a prove run; every bad input (repository, theorem, checkpoint) is
    an InputError, raised before any flow starts (`dojoflow prove`) and again inside it (a
    deployment run)."""
    repo_ids = resolve_repositories(store, repos)
    untried: list[Untried] = []
    selected = select_sorry_theorems(store, repo_ids, theorems, settings, untried)
    return selected, generator_ref(store, checkpoint, settings), untried


def check_prove_inputs(store, repos: list[str], theorems: list[str], checkpoint: str | None, settings) -> None:
    """Everything `dojoflow prove` can check before Prefect starts: the inputs, the backend
    on these theorems, and that the generator generates (tasks/proving/preflight.py)."""
    from .preflight import check_proving

    selected, ref, _ = prove_inputs(store, repos, theorems, checkpoint, settings)
    check_proving(store, settings, ref.path, selected)


def holds_model(path: Path) -> bool:
    """A save_pretrained folder: a full model (config.json) or an adapter (adapter_config.json)."""
    return (path / "config.json").is_file() or (path / "adapter_config.json").is_file()


def newest_generator_checkpoint(store) -> str:
    """The newest SFT (or GRPO) checkpoint in the catalog that holds a model."""
    from storage import catalog
    from tasks.trainers.registry import tactic_generators

    rows = catalog.query(
        store,
        "SELECT path FROM checkpoints WHERE list_contains($t, trainer) ORDER BY created_at DESC",
        params={"t": list(tactic_generators())},
    ).to_pylist()
    for r in rows:
        if holds_model(Path(r["path"])):
            return r["path"]
    raise InputError(
        "--checkpoint",
        "is not given and the catalog holds no tactic generator checkpoint",
        "train one (`dojoflow run`), or pass `--checkpoint FOLDER` or an endpoint generator",
    )


def generator_ref(store, checkpoint: str | None, settings) -> GeneratorRef:
    """The generator: the given folder, the newest tactic generator in
    the catalog, or (an endpoint with no folder) the endpoint's model."""
    import json

    from tasks.checkpoints import MANIFEST, local_model_fingerprint

    if settings.generator.kind == "endpoint" and checkpoint is None:
        return GeneratorRef(checkpoint_id=f"endpoint:{settings.generator.endpoint.model}")
    path = Path(checkpoint or newest_generator_checkpoint(store)).expanduser().resolve()
    if not path.is_dir():
        what = "is a file, not a folder" if path.exists() else "does not exist"
        raise InputError(path, what, "give a tactic generator's checkpoint folder (`--checkpoint`)")
    from tasks.generate.checkpoint import checkpoint_prompt_settings

    checkpoint_prompt_settings(path)  # refuses a checkpoint of a trainer that does not generate tactics
    if not holds_model(path):  # before fingerprinting it: any folder (`--checkpoint /tmp`) would be read whole
        raise InputError(
            path,
            "holds no model (no config.json or adapter_config.json)",
            "give a tactic generator's checkpoint folder",
        )
    manifest = path / MANIFEST
    cid = json.loads(manifest.read_text())["checkpoint"].get("checkpoint_id") if manifest.is_file() else None
    cid = cid or f"folder-{local_model_fingerprint(str(path))}"
    return GeneratorRef(checkpoint_id=cid, path=str(path))


# -- a prove run: its config from the command line, its name, its result -------------------


def prove_config(
    path, *, read, home=None, repos=None, theorems=None, checkpoint=None, out=None, unsafe_no_sandbox=False
):
    """The ProveConfig of `dojoflow prove`: `read(path)` (default: the defaults), with every option
    given (None or empty: not given) winning over it. `read` is `tasks.config.prove_config_from_yaml`,
    which takes a pipeline config too: the pipeline config is the root, nothing below it imports it."""
    from .config import ProveConfig

    cfg = read(path) if path else ProveConfig()
    updates = {
        "home": str(home) if home else cfg.home,
        "repos": list(repos) if repos else cfg.repos,
        "theorems": list(theorems) if theorems else cfg.theorems,
        "checkpoint": str(checkpoint) if checkpoint else cfg.checkpoint,
        "out": str(out) if out else cfg.out,
    }
    if unsafe_no_sandbox:
        updates["proving"] = cfg.proving.model_dump()
        updates["proving"]["backend"]["sandbox"]["unsafe_no_sandbox"] = True
    return ProveConfig.model_validate({**cfg.model_dump(), **updates})


def check_prove_run(config, home: Path) -> None:
    """Every input of a prove run, before Prefect is imported or a flow starts: the patch
    folder, then what `check_prove_inputs` checks."""
    from storage.paths import check_folder_path
    from storage.store import Store

    if config.out:
        check_folder_path(config.out, f"--out {config.out}", "give --out a folder for the patch files")
    store = Store.open(home, create=False)
    check_prove_inputs(store, config.repos, config.theorems, config.checkpoint, config.proving)


def prove_run_name(config) -> str:
    """`prove NatBasics, ListLemmas` (or `prove all repositories`): the name in the UI and `dojoflow runs`."""
    repos = [r.rstrip("/").rsplit("/", 1)[-1] for r in config.repos]
    return "prove " + (", ".join(repos) if repos else "all repositories")


def prove_result(
    run_id: str,
    records: list[SearchRecord],
    written: list,
    card: str | None = None,
    untried: list[Untried] = (),
) -> dict:
    """What a prove run returns (and `dojoflow prove` prints) from its search records, patches,
    results card (None: not written) and the `sorry` theorems it could not try."""
    records, untried = SearchRecord.all(records), Untried.all(untried)
    return {
        "run_id": run_id,
        "theorems": len(records),
        "untried": [{"theorem": u.full_name, "reason": u.reason} for u in untried],
        "proved": [r.full_name for r in records if r.proof],
        # who proved each, with its verdict level (`repl+kernel_replayed`, `repl+elaborator_checked`)
        "proved_by": {r.full_name: r.checker for r in records if r.proof},
        "errors": [{"theorem": r.full_name, "error": r.error} for r in records if r.errors],
        # finished, but the backend cannot verify it (the Dojo without `backend.recheck`): no patch
        "unverified": [r.full_name for r in records if r.unverified],
        "patches": [w.model_dump(mode="json") for w in written],  # tasks/proving/patches.py `Patch`
        "card": card,
    }


SORRY = "sorry"  # the `split_kind` of a `dojoflow prove` run's theorem_results rows: `sorry` theorems, no split


def sorry_rows(records: list[SearchRecord], settings, untried: list[Untried] = ()) -> list[dict]:
    """`theorem_results` rows of a `dojoflow prove` run: each `sorry` theorem tried, with the
    checker that decided it, and each one that could not be tried, with its reason (what the
    results card lists; tasks/card.py)."""
    from .evaluate import theorem_rows

    return theorem_rows(records, list(untried), settings)
