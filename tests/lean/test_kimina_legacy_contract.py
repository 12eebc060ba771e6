"""The backend contract's kimina cases on kimina-ast-server 2.0.4, the 2.0.x line the
conformance reference was read from (the contract suite, tests/lean/test_backend_contract.py,
runs the pinned 2.1.3). Where the two differ (2.0.x answers a whole batch HTTP 500 when one
snippet kills its REPL, and 429 when no REPL is free) the verdicts must not. Only the Lean
process is faked.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/lean/test_kimina_legacy_contract.py -q
"""

from __future__ import annotations

import shutil

import pytest

from storage.errors import InputError
from storage.sample import SAMPLE_ROOT
from tasks.lean import BackendSettings, judge, open_backend
from tests.doubles.kimina_server import API_KEY
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

DE_MORGAN = "intro h\nby_cases hp : p\nexact Or.inr (fun hq => h ⟨hp, hq⟩)\nexact Or.inl hp"  # four tactics


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("LEAN_SERVER_API_KEY", API_KEY)


@pytest.fixture
def server(kimina_legacy):
    kimina_legacy.repl.faults()
    yield kimina_legacy
    kimina_legacy.repl.faults()


def check(store, server, items, theorem_timeout_s: float = 20, **options):
    options.setdefault("retry_backoff_s", 0.01)
    settings = BackendSettings(
        kind="kimina", theorem_timeout_s=theorem_timeout_s, kimina={"url": server.url, **options}
    )
    backend = open_backend(settings, store)
    try:
        return backend.check_proofs(items)
    finally:
        backend.close()


def test_contract_kimina_verdicts(store, theorems, server):
    one_mul, de_morgan = theorems["NatBasics.one_mul'"], theorems["LogicPuzzles.de_morgan_classical"]
    items = [(one_mul, "simp"), (de_morgan, DE_MORGAN), (de_morgan, "intro h\nexact Or.inl hp"), (one_mul, "sorry")]
    proved, multi, wrong, sorry = check(store, server, items)
    assert judge(proved, "simp").proved
    assert judge(multi, DE_MORGAN).proved  # a multi-tactic proof, whole
    assert not wrong.accepted and wrong.error is None  # rejected by Lean: a verdict, not an error
    assert not judge(sorry, "sorry").proved and sorry.error is None


def test_contract_kimina_bad_api_key_fails_before_any_work(store, server, monkeypatch):
    monkeypatch.setenv("LEAN_SERVER_API_KEY", "not-the-key")
    before = len(server.commands())
    with pytest.raises(InputError, match="LEAN_SERVER_API_KEY"):
        open_backend(BackendSettings(kind="kimina", kimina={"url": server.url}), store)
    assert len(server.commands()) == before  # no Lean ran


def test_contract_kimina_snippet_that_kills_its_repl_inside_a_batch(store, theorems, server):
    one_mul, de_morgan = theorems["NatBasics.one_mul'"], theorems["LogicPuzzles.de_morgan_classical"]
    items = [(one_mul, "simp"), (one_mul, "double_crash"), (de_morgan, DE_MORGAN)]
    first, crashed, last = check(store, server, items, batch_size=3, max_retries=1)
    assert judge(first, "simp").proved and judge(last, DE_MORGAN).proved
    assert crashed.error is not None and judge(crashed, "double_crash").reason.startswith("not checked")


def test_contract_kimina_process_crash_mid_batch_is_retried_on_a_fresh_process(store, theorems, server):
    """A Lean process that dies once (not because of the proof): the snippet is sent again on
    a fresh REPL and gets its verdict."""
    server.repl.faults({"when": "de_morgan_classical", "do": "crash", "times": 1})
    one_mul, de_morgan = theorems["NatBasics.one_mul'"], theorems["LogicPuzzles.de_morgan_classical"]
    checks = check(store, server, [(one_mul, "simp"), (de_morgan, DE_MORGAN)], batch_size=2, max_retries=1)
    assert [c.error for c in checks] == [None, None]
    assert judge(checks[0], "simp").proved and judge(checks[1], DE_MORGAN).proved


def test_contract_kimina_file_without_imports_twice_on_one_repl(store, theorems, server):
    """Text with no imports (here a configured header, no namespace) checked twice: the
    second must not meet the first's declaration ("already been declared")."""
    one_mul = theorems["NatBasics.one_mul'"]
    before = len(server.commands())
    first = check(store, server, [(one_mul, "simp")], header="open Nat")[0]
    second = check(store, server, [(one_mul, "simp")], header="open Nat")[0]
    pids = {c["pid"] for c in server.commands()[before:] if "theorem one_mul'" in c.get("cmd", "")}
    assert len(pids) == 1  # one REPL checked both
    assert judge(first, "simp").proved and judge(second, "simp").proved, second.messages


def test_contract_kimina_answer_after_the_timeout_is_an_error(store, theorems, server):
    server.repl.faults({"when": "one_mul", "do": "late", "seconds": 3})
    late = check(store, server, [(theorems["NatBasics.one_mul'"], "simp")], theorem_timeout_s=1)[0]
    assert late.error is not None and "timed out" in late.error and not judge(late, "simp").proved


def test_contract_kimina_module_header(store, theorems, server, tmp_path):
    """Lean (lean4#8174 .. lean4#13117) refuses `#print axioms` in a `module`: the proof is read
    again without the `module` line, as Lean's message advises, and the note says so."""
    project = tmp_path / "NatBasics"
    shutil.copytree(SAMPLE_ROOT / "lean" / "NatBasics", project)
    mul = project / "NatBasics" / "Mul.lean"
    lines = mul.read_text().split("\n")
    assert lines[:2] == ["import NatBasics.Add", ""]  # same line count: the traced start stays right
    mul.write_text("\n".join(["module", "import NatBasics.Add"] + lines[2:]))
    result = check(store, server, [(theorems["NatBasics.one_mul'"], "simp")], projects={"NatBasics": str(project)})[0]
    assert judge(result, "simp").proved and result.error is None
    assert any("refused in a `module`" in m for m in result.messages)
    assert any(c.get("cmd", "").startswith("module") for c in server.commands())  # Lean saw the module first
