"""The ledger's compute figures (tasks/ledger.py): GPU seconds exist only where a GPU did
the work (on a CPU they are absent, never 0), and a generator that is not a model counts no
tokens. The GPU case runs where there is a GPU (the device machine); on CPU the None case.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_ledger.py -q
"""

from __future__ import annotations

import torch

from tasks.compute import gpu_seconds, tokens_generated
from tasks.generate.baseline import ClosingTacticsGenerator
from tasks.ledger import _total


def test_gpu_seconds_are_wall_seconds_times_the_gpus_held_and_absent_without_a_gpu():
    if not torch.cuda.is_available():
        assert gpu_seconds(12.5) is None  # a CPU machine: no such figure, not 0
        return
    torch.zeros(1, device="cuda")  # this process now holds the GPU(s)
    assert gpu_seconds(12.5) == 12.5 * torch.cuda.device_count()


def test_the_baseline_is_no_model_and_counts_no_tokens():
    assert tokens_generated(ClosingTacticsGenerator()) is None


def test_a_total_of_figures_nobody_recorded_is_none_not_zero():
    assert _total([None, None]) is None and _total([]) is None
    assert _total([1.5, None, 2.0]) == 3.5


def test_the_recorded_commit_says_whether_the_tree_was_dirty_and_the_card_shows_it(tmp_path):
    import subprocess

    from storage import ledger
    from storage.store import Store
    from tasks.card import _provenance
    from tasks.checkpoints import code_version

    repo = tmp_path / "src"
    repo.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "one"]):
        (repo / "a.py").write_text("x = 1\n")
        subprocess.run(["git", "-C", str(repo), *args], check=True, env={**env, "PATH": "/usr/bin:/bin"})
    clean = code_version(repo)
    assert clean["git_commit"] and clean["dirty"] is False
    (repo / "a.py").write_text("x = 2\n")  # an uncommitted change: the commit alone no longer says what ran
    assert code_version(repo)["dirty"] is True
    assert code_version(tmp_path)["dirty"] is None  # not a git checkout: not known, not "clean"

    store = Store.open(tmp_path / "home")
    provenance = {
        "dojoflow_version": "0.1",
        "git_commit": clean["git_commit"],
        "git_dirty": True,
        "environment": {},
        "verifier_rule_version": "guard-1",
        "cpu_seconds_at_start": 0.0,
        "gpu": None,
    }
    ledger.record_start(store, "run-1", provenance)
    prov = ledger.read(store, "run-1")
    assert prov["git_dirty"] is True
    run = {"run_id": "run-1", "flow": "f", "status": "completed", "started_at": None, "finished_at": None, "config": {}}
    led = {"run": run, "provenance": prov, "compute": {"wall_seconds": 1}, "snapshots": [], "checkpoints": {}}
    card = "\n".join(_provenance(led))
    assert f"`{clean['git_commit']}` (dirty: true" in card


def test_the_backend_is_named_with_the_version_that_decided():
    from tasks.ledger import backend_version

    prov = {
        "dojoflow_version": "0.1.0",
        "environment": {"packages": {"lean-interact": "0.11.6", "lean-dojo": "4.20.0"}},
    }
    assert backend_version("repl", prov) == "repl via lean-interact 0.11.6"
    assert backend_version("leandojo", prov) == "leandojo via lean-dojo 4.20.0"
    assert backend_version("replay", prov) == "replay: Dojoflow 0.1.0 (no Lean runs)"
    assert "kimina-client (version not recorded)" in backend_version("kimina", prov)
    assert backend_version("repl", None) == "repl via lean-interact (version not recorded)"


def test_the_cards_compute_line_names_only_what_generated_the_tokens_and_untried_benchmarks_their_fingerprint():
    from tasks.card import _gpu_and_tokens
    from tasks.proving.summary import proving_section

    line = _gpu_and_tokens({"gpu_seconds": None, "tokens_generated": 40.0, "tokens_from": ["proof search"]}, None)
    assert line.endswith("40 tokens generated (proof search behind these numbers)")  # before: "GRPO sampling and ..."
    untried = [{"repo_id": "benchmark:mini-bench", "split": "benchmark", "full_name": "m1", "reason": "no trace"}]
    text = "\n".join(proving_section([], [{**untried[0], "benchmark": "abc123"}]))
    assert "| benchmark:mini-bench (fingerprint `abc123`) | benchmark | m1 | no trace |" in text
