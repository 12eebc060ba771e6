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
from dataclasses import dataclass, field
from pathlib import Path

from tasks.lean import BackendSettings, LeanBackend, open_backend
from tests.doubles.lean_process import ReplDouble, make_repl_double


@dataclass
class Harness:
    name: str
    backend: LeanBackend
    double: ReplDouble | None  # the Lean process double behind it, for faults; None: there is no Lean process
    bad_key_settings: BackendSettings | None = None  # settings with a wrong API key (backends that take one)
    lacks: dict[str, str] = field(default_factory=dict)  # what it has no counterpart for -> why (tests skip)


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
    settings.setdefault("sandbox", double.sandbox())  # it runs under bubblewrap, as real Lean does
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


# What a contract test exercises that a backend has no counterpart for (Harness.lacks): the test
# skips with the reason, and the behaviour is covered where named.
DOJO_LACKS = {
    "memory_restart": "lean-dojo restarts no Lean process for memory (nothing like AutoLeanServer's restart "
    "inside run()); a Lean process killed for memory is a DojoCrashError, as in the crash tests",
    "print_axioms": "the Dojo never sends `#print axioms` (it reports no axioms); garbage in a tactic answer is "
    "tests/lean/test_dojo_contract.py::test_fault_garbage_answer_is_an_error",
    "module_header": "a `module` header exists only from Lean v4.2x, where preflight refuses the leandojo "
    "backend (the Dojo's tactics are broken from v4.12, LeanDojo#211; tasks/lean/versions.py)",
}


@contextmanager
def leandojo_harness(store, tmp_path: Path, projects: dict[str, str], **settings):
    """lean-dojo's real `Dojo` over the Lean process double: a fake `lake` whose `lake env lean FILE`
    speaks Lean4Repl's line protocol from the double's core, and the sample traced into lean-dojo's
    cache (tests/doubles/dojo_lean/)."""
    import os

    import pytest

    from tests.doubles.dojo_lean import make_dojo_lean

    if projects:
        pytest.skip(f"leandojo: {DOJO_LACKS['module_header']}")
    double = make_dojo_lean(tmp_path / "dojo")
    old_path = os.environ["PATH"]
    os.environ["PATH"] = f"{double.bin_dir}{os.pathsep}{old_path}"
    try:
        settings.setdefault("work_dir", str(tmp_path / "work"))
        backend = open_backend(
            BackendSettings(
                kind="leandojo", leandojo={"cache_dir": str(double.cache_dir)}, sandbox=double.sandbox(), **settings
            ),
            store,
        )
        try:
            yield Harness("leandojo", backend, double, lacks=DOJO_LACKS)
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
