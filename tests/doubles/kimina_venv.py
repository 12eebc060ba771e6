"""The kimina server's own virtualenv (`.kimina-venv`, git-ignored), made on first use.

Why not Dojoflow's venv: kimina-ast-server 2.1.3 needs kimina-ast-client 0.2.2, whose
`kimina_client/models.py` imports `TypedDict` from `typing` whenever `typing.NotRequired`
exists (Python >= 3.11) and uses it in pydantic models; pydantic refuses `typing.TypedDict`
before Python 3.12 ("Please use `typing_extensions.TypedDict` ... on Python < 3.12"). On
3.11, Dojoflow's Python, the server dies on import. Python 3.12+ (or 3.10, which falls back
to typing_extensions) runs it unmodified, so the server gets a venv of its own.

    python -m tests.doubles.kimina_venv     # make it now (CI does, in .ci/run)
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
from pathlib import Path

# The one pin of the server package (docs/lean-backends.md). kimina-ast-server leaves FastAPI
# unpinned, and its server/main.py passes `FastAPI(..., logger=logger)`, which FastAPI accepted
# through `**extra` up to 0.144.0; 0.145.0 dropped `**extra` (TypeError at start).
KIMINA_SERVER = ("kimina-ast-server==2.1.3", "fastapi==0.144.0")
# 2.0.x, the line the conformance reference was read from (it answers a whole batch HTTP 500
# when one snippet kills its REPL; 2.1.x answers that snippet alone). Same dependencies, so it
# is installed beside them (`pip --target`, put first on PYTHONPATH) for the tests of that path.
LEGACY_SERVER = "kimina-ast-server==2.0.4"
ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".kimina-venv"
MARKER = VENV / "dojoflow-pin.txt"
LEGACY = VENV / "legacy"  # LEGACY_SERVER's `server` package


def _interpreters() -> list[str]:
    found = [shutil.which(name) for name in ("python3.12", "python3.13", "python3.14", "python3.10")]
    found += sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/3.1[0234]*/bin/python3")), reverse=True)
    return [p for p in found if p]


def _works(python: str) -> bool:
    """A pyenv shim exists on PATH even when it cannot run that version: try it."""
    try:
        return subprocess.run([python, "-c", "import venv"], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def server_python() -> Path:
    """The interpreter that runs the kimina server; makes `.kimina-venv` when it is missing."""
    if os.environ.get("DOJOFLOW_KIMINA_PYTHON"):
        return Path(os.environ["DOJOFLOW_KIMINA_PYTHON"])
    python = VENV / "bin" / "python"
    if python.exists() and MARKER.exists() and MARKER.read_text().split() == [*KIMINA_SERVER, LEGACY_SERVER]:
        return python
    base = next((p for p in _interpreters() if _works(p)), None)
    if base is None:
        raise RuntimeError(
            "the kimina server tests need Python 3.12+ (or 3.10) for kimina-ast-server: none found on PATH "
            "or under ~/.pyenv; install one (e.g. `apt-get install python3.12-venv`) or set DOJOFLOW_KIMINA_PYTHON"
        )
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([base, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *KIMINA_SERVER], check=True)
    pip_target = [str(python), "-m", "pip", "install", "-q", "--no-deps", "--target", str(LEGACY)]
    subprocess.run([*pip_target, LEGACY_SERVER], check=True)
    MARKER.write_text("\n".join([*KIMINA_SERVER, LEGACY_SERVER]) + "\n")
    return python


if __name__ == "__main__":
    print(server_python(), file=sys.stderr)
