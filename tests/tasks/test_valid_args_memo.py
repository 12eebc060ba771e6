"""A trainer's settings check that passed is remembered: the same settings are not checked
again (no TRL/transformers/torch import on a rerun); a failing check is never remembered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
RUN_CHECKS = """
import sys
from tasks.config import PipelineConfig
PipelineConfig.from_yaml("examples/tiny.yaml").validate_for_run()
print("checked", "trl" in sys.modules, "torch" in sys.modules)
"""


def probe(cache: Path, code: str = RUN_CHECKS) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1]


def test_the_checks_before_a_run_import_no_trl_or_torch_the_second_time(tmp_path, monkeypatch):
    # The first check runs in this process (TRL is usually imported here already: a subprocess
    # importing TRL and torch only to check was most of this test's time); that it really checked
    # is seen by the trainers' checks being called and TRL imported. The second run, in a fresh
    # process, must then import neither.
    from tasks.config import PipelineConfig
    from tasks.trainers import base

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("DOJOFLOW_HOME", raising=False)
    checked: list[str] = []
    real_load_object = base.load_object

    def counted(ref):
        checked.append(ref)
        return real_load_object(ref)

    monkeypatch.setattr(base, "load_object", counted)
    memo = tmp_path / "dojoflow" / "valid-training-args.json"
    assert not memo.exists()
    PipelineConfig.from_yaml(ROOT / "examples" / "tiny.yaml").validate_for_run()
    assert checked and "trl" in sys.modules and "torch" in sys.modules  # the first time: checked
    assert memo.is_file()
    assert probe(tmp_path) == "checked False False"


def test_a_failed_check_is_raised_every_time(tmp_path, monkeypatch):
    from storage.errors import InputError
    from tasks.config import PipelineConfig

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(
        yaml.safe_dump(
            {
                "sources": [{"sample": "NatBasics"}],
                "trainers": {"sft": {"training": {"learnig_rate": 1e-4}}, "retriever": None, "progress": None},
            }
        )
    )
    for _ in range(2):
        with pytest.raises(InputError, match="learnig_rate"):
            PipelineConfig.from_yaml(cfg).validate_for_run()


def test_the_memo_is_kept_under_the_runs_home_not_the_users_cache(tmp_path, monkeypatch):
    """Runs wrote it to the shared ~/.cache/dojoflow (issue 26)."""
    from tasks.config import PipelineConfig

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    monkeypatch.delenv("DOJOFLOW_HOME", raising=False)
    cfg = PipelineConfig.from_yaml(ROOT / "examples" / "tiny.yaml").model_copy(update={"home": str(tmp_path / "home")})
    cfg.validate_for_run()
    assert (tmp_path / "home" / "cache" / "valid-training-args.json").is_file()
    assert not (tmp_path / "user-cache").exists()
