"""Proving flows: `prove` (try every `sorry` theorem, write patches) and `evaluate-proving`
(a checkpoint's pass@k on chosen repositories); `proving_step` is the curriculum's proving
evaluation after a tactic generator trains (docs/proving.md).

    dojoflow prove --repo NatBasics --checkpoint .dojoflow/checkpoints/sft/<id> [CONFIG.yaml]

Theorems are searched in batches, one Prefect task per batch (`.map`), so the flow's task
runner spreads them: threads by default, a Dask or Ray cluster when the flow runs with
`prefect_dask.DaskTaskRunner` or `prefect_ray.RayTaskRunner`. The tasks are in
tasks/prefect_tasks/proving.py, their logic in tasks/proving/.
"""

from __future__ import annotations

from pathlib import Path

from prefect import flow, get_run_logger, unmapped
from prefect.runtime import flow_run

from storage.store import dojoflow_home
from tasks import events
from tasks.checkpoints import CheckpointRef
from tasks.plan import StepContext
from tasks.prefect_tasks import ProvingTasks, curriculum_tasks, proving_tasks
from tasks.prefect_tasks.events import emit, repository_names
from tasks.proving.config import ProveConfig, ProvingSettings
from tasks.proving.generator_ref import GeneratorRef
from tasks.proving.records import SearchRecord, TheoremToTry
from tasks.proving.sorry import SORRY, prove_result, prove_run_name

from . import ui


def search_batches(
    p: ProvingTasks,
    home: str,
    settings: ProvingSettings,
    generator: GeneratorRef,
    theorems: list[TheoremToTry],
    baseline: bool = False,
) -> list[SearchRecord]:
    """Search `theorems` in batches of `settings.batch_size`, one mapped task each; records in order.
    `baseline`: the closing-tactics baseline generates instead of the generator."""
    batches = [theorems[i : i + settings.batch_size] for i in range(0, len(theorems), settings.batch_size)]
    futures = p.prove_batch.map(
        unmapped(home), unmapped(settings), unmapped(generator), batches, range(len(batches)), unmapped(baseline)
    )
    return [SearchRecord.of(record) for f in futures for record in f.result()]  # of: a v4 cached dict too


def proving_step(at: StepContext, settings: ProvingSettings, checkpoint: CheckpointRef) -> dict:
    """The curriculum's proving evaluation of one step's tactic generator on `at.eval_repos`:
    {metrics, untried, searched_by}."""
    from tasks.proving.summary import proving_lines

    home, split_kind, run_id, step = at.home, at.split_kind, at.run_id, at.step.step
    p, t = proving_tasks(home), curriculum_tasks(home)
    generator = GeneratorRef.of(checkpoint)
    ckpt = generator.checkpoint_id

    # Which theorems: none to try fails the step with the reason; those that cannot be tried are named
    selection = p.select(home, at.eval_repos, split_kind, settings, checkpoint.snapshot_id)
    theorems, untried = list(selection.theorems), list(selection.untried)
    p.check(home, settings, generator, theorems)  # bad settings fail here, before any search

    # The model, then the closing-tactics baseline, searched the same way on the same theorems
    records = search_batches(p, home, settings, generator, theorems)
    baseline = search_batches(p, home, settings, generator, theorems, baseline=True)
    rows = p.metrics(records, settings, ckpt, split_kind, untried)
    rows += p.metrics(baseline, settings, ckpt, split_kind, baseline=True)
    t.record_metrics(home, rows, run_id, step, at.step.primary)
    p.record_results(home, settings, records, untried, run_id, step, ckpt, split_kind, baseline)
    p.record_proofs(home, records, run_id, ckpt, "evaluation")
    log = get_run_logger()
    rows = [r.model_dump() for r in rows]  # the flow's result is JSON for the terminal and the report
    for line in proving_lines(rows, untried):
        log.info("proving at step %s: %s", step, line)
    untried_rows = [u.model_dump() for u in untried]
    return {"metrics": rows, "untried": untried_rows, "searched_by": sorted({r.searched_by for r in records})}


@flow(name="evaluate-proving", persist_result=False)
def evaluate_proving(
    home: str,
    checkpoint: CheckpointRef,
    repo_ids: list[str],
    split_kind: str = "random",
    settings: ProvingSettings = ProvingSettings(),
) -> dict:
    """A checkpoint's proving metrics on `repo_ids` (the curriculum's proving step, on its own):
    {metrics, searched_by (the workers that searched)}.

    Args:
        home: The Dojoflow home whose store holds the repositories.
        checkpoint: A tactic generator's checkpoint, as the curriculum's train task returned it.
        repo_ids: The repositories whose theorems are tried.
        split_kind: The split kind (random, novel_premises) whose `settings.splits` are tried.
        settings: Backend, generator and budgets.
    """
    at = StepContext.alone(str(dojoflow_home(home)), str(flow_run.id or "local"), repo_ids, split_kind)
    return proving_step(at, settings, checkpoint)


def _flow_run_name() -> str:
    config = flow_run.parameters.get("config")
    return prove_run_name(config if isinstance(config, ProveConfig) else ProveConfig.model_validate(config or {}))


@flow(name="prove", flow_run_name=_flow_run_name, persist_result=False)
def prove(config: ProveConfig = ProveConfig()) -> dict:
    """Try every `sorry` theorem of the chosen repositories; proofs to the catalog, one patch per repository."""
    log = get_run_logger()
    home = str(dojoflow_home(config.home))
    run_id = str(flow_run.id or "local")
    p, t = proving_tasks(home), curriculum_tasks(home)
    settings = config.proving

    # Which theorems and which generator; bad input fails here, before any search
    theorems, generator, untried = p.resolve(home, config.repos, config.theorems, config.checkpoint, settings)
    p.check(home, settings, generator, theorems)
    t.record_run_start(home, run_id, "prove", {"name": prove_run_name(config), **config.model_dump(mode="json")})

    # Search every sorry theorem, in batches spread by the task runner; each theorem's outcome to the catalog
    records = search_batches(p, home, settings, generator, theorems)
    p.record_proofs(home, records, run_id, generator.checkpoint_id, "sorry")
    p.record_results(home, settings, records, untried, run_id, 0, generator.checkpoint_id, SORRY)
    for u in untried:
        log.warning("not tried: %s (%s)", u.full_name, u.reason)

    # One checked patch per repository with proofs
    proved = [r for r in records if r.proof]
    out = config.out or str(Path(home) / "patches" / run_id)
    written = p.write_patches(home, proved, out) if proved else []
    t.record_run_end(home, run_id, "completed", None)
    emit(events.proof_found(run_id, generator.checkpoint_id, records, untried, repository_names(home)))
    for w in written:
        log.info("patch for %s (%d proofs): %s", w.name, len(w.theorems), w.path)
    try:  # the run is recorded: a card that cannot be written is said, and `dojoflow card` redoes it
        card = ui.publish_card(home, prove_run_name(config), run_id)
        log.info("results card: %s", card)
    except Exception as e:  # noqa: BLE001
        card = None
        log.error("the results card was not written (%s: %s); run `dojoflow card %s`", type(e).__name__, e, run_id)
    return prove_result(run_id, records, written, card, untried)
