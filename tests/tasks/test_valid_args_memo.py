"""A training-arguments check that passed is remembered: the same settings are not checked
again (no TRL/transformers/torch import on a rerun); a failing check is never remembered."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROBE = """
import sys
from tasks.sft.config import validate_training_args
print(validate_training_args({"learning_rate": "1e-4", "max_steps": 3}), "trl" in sys.modules, "torch" in sys.modules)
"""


RUN_CHECKS = """
import sys
from tasks.config import PipelineConfig
PipelineConfig.from_yaml("examples/tiny.yaml").validate_for_run()
print("checked", "trl" in sys.modules, "torch" in sys.modules)
"""


def probe(cache: Path, code: str = PROBE) -> str:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_CACHE_HOME": str(cache), "HF_HUB_OFFLINE": "1"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT,
                         timeout=600)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip().splitlines()[-1]


def test_a_passed_check_is_not_run_again_and_imports_no_trl_or_torch(tmp_path):
    assert probe(tmp_path) == "{'learning_rate': 0.0001, 'max_steps': 3} True True"
    assert probe(tmp_path) == "{'learning_rate': 0.0001, 'max_steps': 3} False False"


def test_the_checks_before_a_run_import_no_torch_the_second_time(tmp_path):
    assert probe(tmp_path, RUN_CHECKS) == "checked True True"
    assert probe(tmp_path, RUN_CHECKS) == "checked False False"


def test_a_failed_check_is_raised_every_time(tmp_path, monkeypatch):
    import pytest

    from tasks.sft.config import validate_training_args

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for _ in range(2):
        with pytest.raises(ValueError, match="learnig_rate"):
            validate_training_args({"learnig_rate": 1e-4})
