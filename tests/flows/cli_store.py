"""A store with two repositories, one recorded run, its metrics and checkpoints, for
CLI tests that read what runs recorded without training anything."""

from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from storage import checkpoint_registry, metrics
from storage import runs as run_records
from storage.store import Store
from storage.synthetic import write_synthetic_export
from tasks.metric_registry import with_meaning

RUN_ID = "3f2a9c1e-0000-4000-8000-000000000001"
runner = CliRunner()


def invoke(*args, columns: int = 200, **kw):
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False, env={"COLUMNS": str(columns)}, **kw)


def store_with_a_run(tmp_path: Path, names=("alpha", "beta")) -> Path:
    home = tmp_path / "home"
    for name in names:
        r = invoke("import", write_synthetic_export(tmp_path / f"export-{name}", name, 4, 2), "--home", home)
        assert r.exit_code == 0, r.output
    store = Store.open(home, create=False)
    repos = store.repositories()
    run_records.record_start(store, RUN_ID, "curriculum", {"name": "sample"})
    for step, repo in enumerate(repos, start=1):
        for trainer in ("sft", "retriever"):
            cid = f"{trainer}-step{step}-" + "0" * 12
            path = home / "checkpoints" / trainer / cid
            checkpoint_registry.register(store, cid, trainer, f"snap{step}", None, "h", str(path), {})
            rows = [
                {
                    "repo_id": r["repo_id"],
                    "trainer": trainer,
                    "split_kind": "random",
                    "split": split,
                    "metric": "top1_accuracy",
                    "value": 0.25 * step,
                    "count": 4,
                    "checkpoint_id": cid,
                }
                for r in repos[:step]
                for split in ("val", "test")
            ]
            metrics.record(store, [with_meaning(r) for r in rows], RUN_ID, step, repo["repo_id"])
    run_records.record_end(store, RUN_ID, "completed", str(home / "reports" / RUN_ID / "report.md"))
    return home
