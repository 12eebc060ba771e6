"""The `kimina` backend against a kimina-lean-server double on 127.0.0.1 (real HTTP,
the server's wire format; answers from the sample's transitions). No Lean runs here.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_kimina.py -q
"""

from __future__ import annotations

import logging
import socket

import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge, open_backend
from tests.doubles.kimina_server import KiminaDouble
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

DE_MORGAN = "intro h\nby_cases hp : p\nexact Or.inr (fun hq => h ⟨hp, hq⟩)\nexact Or.inl hp"


def kimina(store, url, **kimina_options):
    kimina_options.setdefault("retry_backoff_s", 0.01)
    return open_backend(BackendSettings(kind="kimina", kimina={"url": url, **kimina_options}), store)


def test_kimina_checks_proofs_in_batches_against_kimina_double(store, theorems):
    with KiminaDouble() as server:
        backend = kimina(store, server.url, batch_size=2)
        try:
            de_morgan = theorems["LogicPuzzles.de_morgan_classical"]
            items = [
                (de_morgan, DE_MORGAN),
                (de_morgan, "intro h\nexact Or.inl hp"),
                (theorems["NatBasics.sumTo_formula"], "sorry"),
                (theorems["NatBasics.sumTo_formula"], "native_decide"),
                (theorems["NatBasics.one_mul'"], "simp"),
            ]
            checks = backend.check_proofs(items)
        finally:
            backend.close()
    assert [c.checker for c in checks] == ["kimina"] * 5
    assert checks[0].accepted and set(checks[0].axioms) == {"propext", "Classical.choice", "Quot.sound"}
    assert judge(checks[0], DE_MORGAN).proved
    assert not checks[1].accepted and checks[1].error is None
    assert not judge(checks[2], "sorry").proved and "sorryAx" in checks[2].axioms
    # native_decide compiles and runs code: never sent (it was, and Lean said Lean.ofReduceBool)
    assert not judge(checks[3], "native_decide").proved and "not sent to Lean" in checks[3].messages[0]
    assert judge(checks[4], "simp").proved
    assert "native_decide" not in server.snippets()
    assert [len(body["snippets"]) for body in server.received] == [2, 2]  # batch_size 2
    assert "#print axioms LogicPuzzles.de_morgan_classical" in server.snippets()
    assert "# Propositional logic" in server.snippets()  # the theorem's file header goes with its proof


def check_one(store, theorems, server, proof: str = "simp", **options):
    """Check one proof of NatBasics.one_mul' (traced: `simp`) on a new backend."""
    backend = kimina(store, server.url, **options)
    try:
        return backend.check_proof(theorems["NatBasics.one_mul'"], proof)
    finally:
        backend.close()


def test_kimina_retries_when_no_repl_is_free_against_kimina_double(store, theorems):
    with KiminaDouble(busy_for=2) as server:
        check = check_one(store, theorems, server, max_retries=3)
    assert check.accepted and server.checks == 3


def test_kimina_busy_beyond_retries_is_an_error_not_a_rejection_against_kimina_double(store, theorems):
    with KiminaDouble(busy_for=100) as server:
        check = check_one(store, theorems, server, max_retries=2)
    assert check.error is not None and "429" in check.error and server.checks == 3
    assert judge(check, "simp").reason.startswith("not checked")


def test_kimina_timeout_and_crash_are_errors_against_kimina_double(store, theorems):
    theorem = theorems["NatBasics.one_mul'"]
    with KiminaDouble() as server:
        backend = kimina(store, server.url, max_retries=1)
        try:
            hung = backend.check_proof(theorem, "double_hang")
            crashed = backend.check_proof(theorem, "double_crash")
        finally:
            backend.close()
    assert hung.error is not None and "timed out" in hung.error and not hung.accepted
    assert crashed.error is not None and "500" in crashed.error
    hang_sends = [s for b in server.received for s in b["snippets"] if "double_hang" in s["code"]]
    assert len(hang_sends) == 2  # a timed-out snippet is sent once more, then reported


def test_forbidden_construct_never_reaches_kimina_double(store, theorems):
    with KiminaDouble() as server:
        backend = kimina(store, server.url)
        try:
            check = backend.check_proof(theorems["NatBasics.one_mul'"], 'simp\nrun_cmd IO.println "hi"')
            assert backend.check_proof(theorems["NatBasics.one_mul'"], "simp").accepted
        finally:
            backend.close()
    assert not check.accepted and "not sent to Lean" in check.messages[0]
    assert "run_cmd" not in server.snippets() and "simp" in server.snippets()


def test_kimina_sends_the_api_key_from_the_environment_and_never_logs_it(store, theorems, monkeypatch, caplog):
    monkeypatch.setenv("LEAN_SERVER_API_KEY", "s3cret-key")
    caplog.set_level(logging.DEBUG)
    with KiminaDouble(api_key="s3cret-key") as server:
        check = check_one(store, theorems, server)
        assert check.accepted and set(server.auth_headers) == {"Bearer s3cret-key"}
        monkeypatch.setenv("LEAN_SERVER_API_KEY", "wrong")
        with pytest.raises(InputError, match="LEAN_SERVER_API_KEY") as err:
            kimina(store, server.url)
    assert "s3cret" not in caplog.text and "wrong" not in str(err.value)


def test_kimina_url_down_fails_before_any_work(store):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket is closed
    with pytest.raises(InputError, match="not reachable") as err:
        kimina(store, f"http://127.0.0.1:{port}")
    assert "backend.kimina.url" in str(err.value)


def test_kimina_has_no_tactic_mode(store, theorems):
    with KiminaDouble() as server:
        backend = kimina(store, server.url)
        try:
            result = backend.start(theorems["NatBasics.one_mul'"])
        finally:
            backend.close()
    assert result.status == "error" and "whole proofs" in result.message
