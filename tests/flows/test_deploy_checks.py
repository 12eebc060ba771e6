"""`prefect deploy` of the nightly warns when the machine has no Lean toolchain (the nightly
traces repositories), instead of the first night failing at run time."""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from flows.runtime.deploy_checks import warn_if_no_lean_toolchain

ROOT = Path(__file__).resolve().parents[2]


def test_the_nightly_deployment_runs_the_check_at_deploy_time():
    doc = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    nightly = next(d for d in doc["deployments"] if d["name"] == "nightly")
    assert nightly["build"] == [{"flows.runtime.deploy_checks.warn_if_no_lean_toolchain": {}}]


def test_no_toolchain_warns_with_the_fix_and_does_not_fail(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    assert warn_if_no_lean_toolchain() == {"lean_toolchain": "missing"}
    err = capsys.readouterr().err
    assert "warning: nightly: no lake here (not on PATH)" in err and "install elan" in err and "dojoflow doctor" in err


def test_a_toolchain_on_path_is_found_silently(tmp_path, monkeypatch, capsys):
    for name, line in (("elan", "elan 4.1.2"), ("lean", "Lean (version 4.20.0)"), ("lake", "Lake version 5.0.0")):
        (tmp_path / name).write_text(f"#!/bin/sh\necho '{line}'\n")
        (tmp_path / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    assert warn_if_no_lean_toolchain() == {"lean_toolchain": "found"}
    assert capsys.readouterr().err == ""
