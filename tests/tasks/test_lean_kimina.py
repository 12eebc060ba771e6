"""The `kimina` backend against the real kimina server package (kimina-ast-server 2.1.3, and
2.0.4 where it behaves otherwise) on 127.0.0.1, with the Lean process double as its REPL
(tests/doubles/kimina_server.py). Only Lean is fake.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_kimina.py -q
"""

from __future__ import annotations

import json
import logging
import socket
from dataclasses import replace

import httpx
import pytest

from storage.errors import InputError
from tasks.lean import BackendSettings, judge, open_backend
from tests.doubles.kimina_server import API_KEY
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

DE_MORGAN = "intro h\nby_cases hp : p\nexact Or.inr (fun hq => h ⟨hp, hq⟩)\nexact Or.inl hp"


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("LEAN_SERVER_API_KEY", API_KEY)


@pytest.fixture(autouse=True)
def no_faults(kimina):
    kimina.repl.faults()
    yield
    kimina.repl.faults()


def open_kimina(store, url, theorem_timeout_s: float = 20, **kimina_options):
    kimina_options.setdefault("retry_backoff_s", 0.01)
    settings = BackendSettings(
        kind="kimina", theorem_timeout_s=theorem_timeout_s, kimina={"url": url, **kimina_options}
    )
    return open_backend(settings, store)


def check_all(store, server, items, **options):
    backend = open_kimina(store, server.url, **options)
    bodies: list[dict] = []
    backend.client.event_hooks["request"].append(lambda req: bodies.append(json.loads(req.content)))
    try:
        return backend.check_proofs(items), bodies
    finally:
        backend.close()


def test_kimina_checks_proofs_in_batches_against_the_real_server(store, theorems, kimina):
    de_morgan = theorems["LogicPuzzles.de_morgan_classical"]
    items = [
        (de_morgan, DE_MORGAN),
        (de_morgan, "intro h\nexact Or.inl hp"),
        (theorems["NatBasics.sumTo_formula"], "sorry"),
        (theorems["NatBasics.sumTo_formula"], "native_decide"),
        (theorems["NatBasics.one_mul'"], "simp"),
    ]
    checks, bodies = check_all(store, kimina, items, batch_size=2)
    assert [c.checker for c in checks] == ["kimina"] * 5
    assert [c.error for c in checks] == [None] * 5
    assert checks[0].accepted and set(checks[0].axioms) == {"propext", "Classical.choice", "Quot.sound"}
    assert judge(checks[0], DE_MORGAN).proved
    assert not checks[1].accepted
    assert not judge(checks[2], "sorry").proved and "sorryAx" in checks[2].axioms
    # native_decide compiles and runs code: never sent (it was, and Lean said Lean.ofReduceBool)
    assert not judge(checks[3], "native_decide").proved and "not sent to Lean" in checks[3].messages[0]
    assert judge(checks[4], "simp").proved
    assert [len(body["snippets"]) for body in bodies] == [2, 2]  # batch_size 2
    assert "native_decide" not in kimina.snippets()
    # the statement check under a fresh name, then its axioms (tasks/lean/verdict.py, rules 2 and 3)
    # (NAME as the statement declares it, in the header's namespace: issue 16 review)
    assert ":= de_morgan_classical\n#print axioms _dojoflow_check_" in kimina.snippets()
    assert "# Propositional logic" in kimina.snippets()  # the theorem's file header goes with its proof


def test_a_theorem_from_a_grpo_theorem_file_is_checked_not_bad_input(store, theorems, kimina):
    """Issue 16 review: a theorem-file spec has no repository, so no file path; `bad_theorem`
    refused its empty path ("the file path '' leaves the repository") and every such theorem
    was bad input. Its statement and name are validated; the configured header is its header."""
    from tasks.grpo.theorem_files import FileTheorem, theorem_specs

    de_morgan = theorems["LogicPuzzles.de_morgan_classical"]
    spec = theorem_specs([FileTheorem("de_morgan_classical", de_morgan.statement)])[0]
    assert spec.file_path == "" and spec.url == ""
    items = [(spec, DE_MORGAN), (spec, "intro h\nexact Or.inl hp")]
    # one at a time: one REPL with this header on the shared server (a later test counts on it)
    checks = [check_all(store, kimina, [item], header="import Init")[0][0] for item in items]
    assert [c.error for c in checks] == [None, None], checks
    assert judge(checks[0], DE_MORGAN).proved and not judge(checks[1], "intro h\nexact Or.inl hp").proved
    renamed = replace(spec, full_name="Nat.one_mul")  # what a theorem file has is still validated
    assert "declares `de_morgan_classical`" in (
        check_all(store, kimina, [(renamed, "simp")], header="import Init")[0][0].error or ""
    )


def test_kimina_snippets_without_imports_twice_on_one_repl_are_accepted_twice(store, theorems, kimina):
    """Conformance #8: the server runs only a snippet's leading imports as the REPL's header
    (env 0) and every later body with that header on env 0. Without imports, env 0 was the
    first proof's own environment, and the same declaration checked again on that REPL failed
    with "already been declared" (here: a configured header with no imports and no namespace)."""
    one_mul = theorems["NatBasics.one_mul'"]
    before = len(kimina.commands())
    first, _ = check_all(store, kimina, [(one_mul, "simp")], header="open Nat")
    second, _ = check_all(store, kimina, [(one_mul, "simp")], header="open Nat")
    bodies = [c for c in kimina.commands()[before:] if "theorem one_mul'" in c.get("cmd", "")]
    assert len(bodies) == 2 and bodies[0]["pid"] == bodies[1]["pid"]  # one REPL, reused
    assert bodies[1].get("env") == 0  # the server's reuse
    assert not any("already been declared" in m for m in second[0].messages), second[0].messages
    assert judge(first[0], "simp").proved and judge(second[0], "simp").proved


def test_kimina_file_without_imports_gets_its_imports_as_the_servers_header(store, theorems, kimina):
    """A file with no imports (LogicPuzzles/Props.lean): `import Init`, which it imports
    implicitly, is the REPL's header, so env 0 holds no proof."""
    de_morgan = theorems["LogicPuzzles.de_morgan_classical"]
    before = len(kimina.commands())
    checks = [check_all(store, kimina, [(de_morgan, DE_MORGAN)])[0][0] for _ in range(2)]
    bodies = [c for c in kimina.commands()[before:] if "de_morgan_classical" in c["cmd"]]
    assert all(judge(c, DE_MORGAN).proved for c in checks)
    assert all(c.get("env") == 0 for c in bodies)
    for pid in {c["pid"] for c in bodies}:  # each REPL that checked it began with the imports alone
        assert next(c for c in kimina.commands() if c["pid"] == pid) == {"pid": pid, "cmd": "import Init"}


def test_kimina_snippet_that_kills_its_repl_does_not_fail_its_batch_mates(store, theorems, kimina):
    """Conformance #9 on 2.1.x: the crashing snippet is an error with the server's reason,
    never a rejection; the others in its request keep their verdicts."""
    one_mul = theorems["NatBasics.one_mul'"]
    items = [(one_mul, "simp"), (one_mul, "double_crash"), (theorems["LogicPuzzles.de_morgan_classical"], DE_MORGAN)]
    checks, bodies = check_all(store, kimina, items, batch_size=3)
    assert checks[0].accepted and checks[2].accepted
    crashed = checks[1]
    assert crashed.error is not None and not crashed.accepted
    assert judge(crashed, "double_crash").reason.startswith("not checked")
    assert len(bodies[0]["snippets"]) == 3


def test_kimina_batch_answered_500_by_a_2_0_server_is_split_so_batch_mates_keep_verdicts(
    store, theorems, kimina_legacy
):
    """Conformance #9 as the reference read it (2.0.x): one snippet that kills its REPL makes
    the whole request HTTP 500 (`asyncio.gather`). Retrying the batch failed every snippet;
    now it is split, and only the culprit is an error."""
    one_mul = theorems["NatBasics.one_mul'"]
    items = [(one_mul, "simp"), (one_mul, "double_crash"), (theorems["LogicPuzzles.de_morgan_classical"], DE_MORGAN)]
    checks, bodies = check_all(store, kimina_legacy, items, batch_size=3, max_retries=1)
    assert checks[0].accepted and checks[2].accepted, [c.error for c in checks]
    assert checks[1].error is not None and "500" in checks[1].error
    assert len(bodies[0]["snippets"]) == 3 and [len(b["snippets"]) for b in bodies[1:]] == [1, 1, 1]


def test_kimina_sends_integer_timeouts(store, theorems, kimina):
    """Conformance #15: `CheckRequest.timeout` is an int; 2.5 s was refused with 422."""
    checks, bodies = check_all(store, kimina, [(theorems["NatBasics.one_mul'"], "simp")], theorem_timeout_s=2.5)
    assert checks[0].accepted and checks[0].error is None
    assert bodies[0]["timeout"] == 3 and isinstance(bodies[0]["timeout"], int)


def test_kimina_timeout_is_an_error_sent_once_more(store, theorems, kimina):
    checks, bodies = check_all(store, kimina, [(theorems["NatBasics.one_mul'"], "double_hang")], theorem_timeout_s=1)
    assert checks[0].error is not None and "timed out" in checks[0].error and not checks[0].accepted
    assert len(bodies) == 2  # a snippet the server answered with an error is sent once more, then reported


def test_forbidden_construct_never_reaches_the_kimina_server(store, theorems, kimina):
    before = len(kimina.commands())
    checks, _ = check_all(store, kimina, [(theorems["NatBasics.one_mul'"], 'simp\nrun_cmd IO.println "hi"')])
    assert not checks[0].accepted and "not sent to Lean" in checks[0].messages[0]
    assert "run_cmd" not in "\n".join(c.get("cmd", "") for c in kimina.commands()[before:])


def test_kimina_preflight_checks_the_key_on_a_route_that_needs_it(store, kimina, monkeypatch, caplog):
    """Conformance #13: the real `/health` has no auth, so a bad key passed preflight and
    then every check was a 401 error. Preflight now asks `/api/check`."""
    caplog.set_level(logging.DEBUG)
    assert httpx.get(kimina.url + "/health").status_code == 200  # no key needed there
    open_kimina(store, kimina.url).close()  # the right key passes
    monkeypatch.setenv("LEAN_SERVER_API_KEY", "wrong-key")
    with pytest.raises(InputError, match="LEAN_SERVER_API_KEY") as err:
        open_kimina(store, kimina.url)
    monkeypatch.delenv("LEAN_SERVER_API_KEY")
    with pytest.raises(InputError, match="got no key"):
        open_kimina(store, kimina.url)
    assert "wrong-key" not in str(err.value) and "wrong-key" not in caplog.text and API_KEY not in caplog.text


def test_kimina_url_down_fails_before_any_work(store):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens here once the socket is closed
    with pytest.raises(InputError, match="not reachable") as err:
        open_kimina(store, f"http://127.0.0.1:{port}")
    assert "backend.kimina.url" in str(err.value)


def test_kimina_has_no_tactic_mode(store, theorems, kimina):
    backend = open_kimina(store, kimina.url)
    try:
        result = backend.start(theorems["NatBasics.one_mul'"])
    finally:
        backend.close()
    assert result.status == "error" and "whole proofs" in result.message


@pytest.mark.parametrize(
    "header, imports, rest, pinned",
    [
        ("import A\nimport B\n\nnamespace X\n", ["import A", "import B"], "\nnamespace X\n", False),
        (
            "/- Copyright\nimport Fake -/\nimport A\n-- note\nopen B\n",
            ["import A"],
            "/- Copyright\nimport Fake -/\n-- note\nopen B\n",
            False,
        ),
        ("namespace X\n", [], "namespace X\n", False),
        ("module\n\nimport A\n", [], "module\n\nimport A\n", True),
        ("/-! doc -/\nprelude\nimport Init.Core\n", [], "/-! doc -/\nprelude\nimport Init.Core\n", True),
    ],
)
def test_split_imports_finds_the_imports_lean_reads_first(header, imports, rest, pinned):
    from tasks.lean.source import split_imports

    assert split_imports(header) == (imports, rest, pinned)


def test_kimina_imports_after_a_leading_comment_go_first(store, theorems, kimina, tmp_path):
    """Mathlib-style files open with a copyright comment, then the imports. The server takes
    only *leading* import lines as the header; Dojoflow hoists them so the server runs them
    as the REPL's header instead of sending them inside a body on env 0."""
    import shutil

    from storage.sample import SAMPLE_ROOT

    project = tmp_path / "NatBasics"
    shutil.copytree(SAMPLE_ROOT / "lean" / "NatBasics", project)
    mul = project / "NatBasics" / "Mul.lean"
    lines = mul.read_text().split("\n")
    assert lines[:2] == ["import NatBasics.Add", ""]  # same line count: the traced start stays right
    mul.write_text("\n".join(["/- Copyright (c) the sample -/", "import NatBasics.Add"] + lines[2:]))
    before = len(kimina.commands())
    checks, _ = check_all(
        store, kimina, [(theorems["NatBasics.one_mul'"], "simp")] * 2, projects={"NatBasics": str(project)}
    )
    assert all(judge(c, "simp").proved for c in checks)
    sent = [c["cmd"] for c in kimina.commands()[before:]]
    assert not any("import" in cmd for cmd in sent if "theorem one_mul'" in cmd)  # imports never in a body
    assert all(cmd.startswith("/- Copyright") for cmd in sent if "theorem one_mul'" in cmd)


def test_kimina_answer_over_the_cap_is_an_error_never_read_whole(store, theorems, kimina):
    """Issue 27 §4: a proof that makes Lean print megabytes (the double's `flood`, modelled from
    `iterate n (trace ...)`) gives an HTTP answer Dojoflow stops reading at `max_answer_mb` per
    snippet: an error naming the reason, never parsed, never a verdict."""
    kimina.repl.faults({"when": "one_mul", "do": "flood", "mb": 3})
    settings = BackendSettings(
        kind="kimina",
        theorem_timeout_s=20,
        kimina={"url": kimina.url, "retry_backoff_s": 0.01},
        sandbox={"max_answer_mb": 1},
    )
    backend = open_backend(settings, store)
    try:
        check = backend.check_proof(theorems["NatBasics.one_mul'"], "simp")
    finally:
        backend.close()
    assert check.error is not None and "exceeded 1048576 bytes" in check.error, check.error
    assert not check.accepted and judge(check, "simp").status == "error"
