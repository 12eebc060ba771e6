"""`dojoflow doctor`: each check reports what is there, and what a missing piece costs and how to
get it. Lean's tools are stand-ins on PATH (shell scripts printing a version): doctor only asks
them `--version`, and `lake` is a symlink to `elan`, as Debian's elan package installs it (elan
dispatches on the name it was called by)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from typer.testing import CliRunner

from flows.cli import app
from tasks import doctor


def fake_tool(folder: Path, name: str, first_line: str) -> Path:
    path = folder / name
    path.write_text(f"#!/bin/sh\necho '{first_line}'\n")
    path.chmod(0o755)
    return path


def test_lean_tools_found_with_their_versions_and_lake_as_a_symlink_to_elan(tmp_path, monkeypatch):
    elan = fake_tool(tmp_path, "elan", "elan 4.1.2 (58e8d545e 2025-05-26)")
    (tmp_path / "lake").symlink_to(elan)
    fake_tool(tmp_path, "lean", "Lean (version 4.20.0, x86_64-unknown-linux-gnu, commit 1, Release)")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    checks = {c.name: c for c in doctor.check_lean_toolchain()}
    assert checks["elan"].ok and checks["elan"].found.startswith("elan 4.1.2")
    assert checks["Lean"].ok and "version 4.20.0" in checks["Lean"].found
    assert checks["lake"].ok and f"-> {elan}" in checks["lake"].found  # the symlink is shown, not resolved


def test_missing_lean_names_the_features_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing on it
    checks = {c.name: c for c in doctor.check_lean_toolchain()}
    for name in ("elan", "Lean", "lake"):
        assert not checks[name].ok and checks[name].found == "not on PATH"
        assert "repl and leandojo backends" in checks[name].needed_for and "elan" in checks[name].fix


def test_a_lean_that_fails_is_not_reported_as_there(tmp_path, monkeypatch):
    broken = tmp_path / "lean"
    broken.write_text("#!/bin/sh\necho 'error: no default toolchain configured' >&2\nexit 1\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    lean = next(c for c in doctor.check_lean_toolchain() if c.name == "Lean")
    assert not lean.ok and "no default toolchain" in lean.found and "elan default" in lean.fix


def test_missing_bubblewrap_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    bwrap = doctor.check_bubblewrap()
    assert not bwrap.ok and "apt-get install bubblewrap" in bwrap.fix and "untrusted proofs" in bwrap.needed_for


def test_without_comparator_doctor_says_proofs_are_elaborator_checked_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no comparator, lean4export or lake
    gold = doctor.check_gold_standard()
    assert not gold.ok and "comparator is not installed" in gold.found and "elaborator_checked" in gold.found
    assert "leanprover/comparator" in gold.fix and "lean4export" in gold.fix and "kernel_replayed" in gold.needed_for


def test_with_comparator_doctor_names_the_sandbox_of_its_builds(tmp_path, monkeypatch):
    from tests.doubles.comparator_double import make_comparator_double

    bin_dir = make_comparator_double(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    gold = doctor.check_gold_standard()
    assert gold.ok and "comparator" in gold.found and ("bubblewrap" in gold.found or "landrun" in gold.found)


def test_packages_report_versions_or_the_extra_to_install(monkeypatch):
    monkeypatch.setattr(
        doctor, "PACKAGES", (*doctor.PACKAGES, ("no-such-dist", "no_such_module_x", "a feature", "pip install x"))
    )
    checks = {c.name: c for c in doctor.check_packages()}
    assert checks["package lean-interact"].ok and checks["package lean-interact"].found.startswith("lean-interact 0.")
    assert not checks["package no-such-dist"].ok and checks["package no-such-dist"].fix == "pip install x"


def test_doctor_command_prints_every_check_as_json(tmp_path):
    r = CliRunner().invoke(app, ["doctor", "--json", "--home", str(tmp_path)], env={"PREFECT_API_URL": ""})
    assert r.exit_code == 0, r.output
    rows = {row["name"]: row for row in json.loads(r.output)}
    assert {"Python", "Prefect server", "GPU", "Lean", "lake", "bubblewrap", "package lean-interact"} <= set(rows)
    assert rows["Python"]["ok"] is True and sys.executable in rows["Python"]["found"]
    assert rows["Prefect server"]["found"].startswith("none running")


def test_a_home_off_a_posix_disk_is_refused_with_why_and_where_to_share_results(tmp_path):
    ok = doctor.check_home_filesystem(str(tmp_path / "new-home"))  # not created yet: its parent decides
    assert ok.ok and "flock works" in ok.found
    url = doctor.check_home_filesystem("s3://team-bucket/dojoflow")
    assert not url.ok and "is a URL" in url.found and "result_storage" in url.fix and "DuckDB" in url.needed_for
    mounts = tmp_path / "mounts"  # /proc/mounts' format, the home's folder on an s3fs mount
    mounts.write_text(f"/dev/sda1 / ext4 rw 0 0\ns3fs {tmp_path} fuse.s3fs rw 0 0\n")
    fuse = doctor.check_home_filesystem(str(tmp_path / "home"), mounts=str(mounts))
    assert not fuse.ok and "fuse.s3fs: no flock" in fuse.found and "local disk" in fuse.fix


def test_doctor_command_says_why_a_url_home_cannot_hold_the_catalog(tmp_path):
    out = CliRunner().invoke(app, ["doctor", "--home", "gs://bucket/home"], env={"COLUMNS": "300"})
    assert "no home file system: needed for every run: the catalog (a DuckDB file) and the locks (flock)" in out.output


def test_doctor_json_survives_a_non_url_prefect_api_url_and_a_lake_printing_binary(tmp_path):
    """Both ended `doctor --json` in a traceback (issue 26): ValueError from urllib, UnicodeDecodeError."""
    lake = tmp_path / "lake"
    lake.write_bytes(b"#!/bin/sh\nprintf 'lake \\377\\376 version\\n'\n")
    lake.chmod(0o755)
    env = {"PREFECT_API_URL": "not-a-url", "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"}
    r = CliRunner().invoke(app, ["doctor", "--json", "--home", str(tmp_path / "home")], env=env)
    assert r.exit_code == 0, r.output
    rows = {row["name"]: row for row in json.loads(r.output)}
    assert rows["Prefect server"]["ok"] is False and "not-a-url" in rows["Prefect server"]["found"]
    assert rows["lake"]["found"].startswith("lake \ufffd\ufffd version")


def test_a_hung_lake_version_is_killed_with_the_children_it_started(tmp_path, monkeypatch):
    import psutil

    pidfile = tmp_path / "child.pid"
    lake = tmp_path / "lake"  # a child of its own (as elan starts the toolchain's lake), then it hangs
    lake.write_text(f"#!/bin/sh\nsleep 600 >/dev/null 2>&1 &\necho $! > {pidfile}\nexec sleep 600\n")
    lake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(doctor, "PROBE_TIMEOUT_S", 3)
    checks = {c.name: c for c in doctor.check_lean_toolchain()}
    assert not checks["lake"].ok and "`lake --version` failed" in checks["lake"].found
    child = int(pidfile.read_text())
    try:
        psutil.Process(child).wait(timeout=60)  # returns at once once it is gone; a ceiling only
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        os.kill(child, 9)
        raise AssertionError("the hung lake's child outlived doctor") from None
