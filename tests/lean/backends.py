"""How the backend contract suite (test_backend_contract.py) opens each registered backend
with only the Lean process faked: one factory per backend name in `FACTORIES`.

Adding a backend to the suite is one entry here: a context manager
`factory(store, tmp_path, projects, **settings) -> Harness` that opens the backend (through
`open_backend`, as users do) with the Lean process double (tests/doubles/lean_process/) behind
it and yields a `Harness`; `projects` maps a repository name to a checkout that replaces the
sample's sources (the suite writes variants of them: a `module` header), `settings` are
BackendSettings fields (timeouts, memory limit). A backend registered in tasks/lean/registry.py
without a factory fails the suite, so none is left out silently.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tasks.lean import BackendSettings, LeanBackend, open_backend
from tests.doubles.lean_process import ReplDouble, make_repl_double


@dataclass
class Harness:
    name: str
    backend: LeanBackend
    double: ReplDouble | None  # the Lean process double behind it, for faults; None: there is no Lean process
    bad_key_settings: BackendSettings | None = None  # settings with a wrong API key (backends that take one)


@contextmanager
def replay_harness(store, tmp_path: Path, projects: dict[str, str], **settings):
    backend = open_backend(BackendSettings(kind="replay", **settings), store)
    try:
        yield Harness("replay", backend, None)
    finally:
        backend.close()


@contextmanager
def repl_harness(store, tmp_path: Path, projects: dict[str, str], **settings):
    double = make_repl_double(tmp_path / "repl-double")
    settings.setdefault("work_dir", str(tmp_path / "work"))
    backend = open_backend(BackendSettings(kind="repl", repl=double.options(projects=projects), **settings), store)
    try:
        yield Harness("repl", backend, double)
    finally:
        backend.close()


@contextmanager
def kimina_harness(store, tmp_path: Path, projects: dict[str, str], **settings):
    """The real kimina server package (kimina-ast-server 2.1.3, one per session:
    tests/doubles/kimina_server.py) with the Lean process double as its REPL."""
    import os

    from tests.doubles.kimina_server import API_KEY, shared_server

    server = shared_server()
    saved = {k: os.environ.get(k) for k in ("LEAN_SERVER_API_KEY", "DOJOFLOW_CONTRACT_WRONG_KEY")}
    os.environ.update(LEAN_SERVER_API_KEY=API_KEY, DOJOFLOW_CONTRACT_WRONG_KEY="not-the-key")
    server.repl.faults()
    options = {"url": server.url, "projects": projects, "retry_backoff_s": 0.01}
    try:
        backend = open_backend(BackendSettings(kind="kimina", kimina=options, **settings), store)
        bad_key = BackendSettings(kind="kimina", kimina={**options, "api_key_env": "DOJOFLOW_CONTRACT_WRONG_KEY"})
        try:
            yield Harness("kimina", backend, server.repl, bad_key)
        finally:
            backend.close()
    finally:
        server.repl.faults()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@contextmanager
def leandojo_harness(store, tmp_path: Path, projects: dict[str, str], **settings):
    """Interim, until lean-dojo's real `Dojo` drives the Lean process double (issue 14, wt-dojo):
    the hand-written Dojo double on the worker's path (no faults, no `projects`)."""
    import os

    import pytest

    from tests.doubles.dojo import make_dojo_double

    if projects:
        pytest.skip("the interim Dojo double reads no checkout: the real Dojo replaces it (wt-dojo)")
    pkgs = make_dojo_double(tmp_path / "pkgs")
    lake_dir = make_repl_double(tmp_path / "lake").lake_path.parent
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{lake_dir}{os.pathsep}{old_path}"
    try:
        backend = open_backend(
            BackendSettings(
                kind="leandojo",
                work_dir=str(tmp_path / "work"),
                leandojo={"extra_pythonpath": [str(pkgs)]},
                **settings,
            ),
            store,
        )
        try:
            yield Harness("leandojo", backend, None)
        finally:
            backend.close()
    finally:
        os.environ["PATH"] = old_path


FACTORIES = {
    "repl": repl_harness,
    "kimina": kimina_harness,
    "leandojo": leandojo_harness,
    "replay": replay_harness,
}


# (contract test, backend) -> the mismatch it still has; the suite marks it a strict xfail.
KNOWN_GAPS: dict[tuple[str, str], str] = {}
