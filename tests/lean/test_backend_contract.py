"""One contract for every registered Lean backend: the same theorems, proofs and faults give
the same verdicts. Only the Lean process is faked (tests/doubles/lean_process/); the packages
above it run unmodified. Backends come from tasks/lean/registry.py, each opened by its factory
in tests/lean/backends.py; faults need a Lean process double behind the backend (replay has no
Lean process, and is a lower bound: it proves only what was traced, which is why the theorems
here are traced ones).

No verdict here says Lean checked anything: the double answers from the sample's traced data.

    PYTHONPATH=$PWD python -m pytest tests/lean/test_backend_contract.py -q
"""

from __future__ import annotations

import shutil
from contextlib import ExitStack, contextmanager
from dataclasses import replace

import pytest

from storage.sample import SAMPLE_ROOT
from tasks.lean import check_proofs, judge
from tasks.lean.registry import backends
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)
from tests.lean.backends import FACTORIES, KNOWN_GAPS

# Traced proofs of the sample (so replay knows them too): one in a file without imports, one with.
AND_SWAP = "LogicPuzzles.and_swap'"  # LogicPuzzles/Props.lean: no imports
AND_SWAP_PROOF = ["intro h", "constructor", "exact h.2", "exact h.1"]
CONTRAPOSITIVE = "LogicPuzzles.contrapositive"  # also Props.lean
CONTRAPOSITIVE_PROOF = ["intro hnq hp", "exact hnq (h hp)"]
IS_EVEN_ADD = "NatBasics.isEven_add"  # NatBasics/Add.lean: `import NatBasics.Defs`
IS_EVEN_ADD_PROOF = ["obtain ⟨a, ha⟩ := hm", "obtain ⟨b, hb⟩ := hn", "refine ⟨a + b, ?_⟩", "omega"]


@pytest.fixture(params=list(backends()))
def name(request):
    return request.param


@pytest.fixture(autouse=True)
def _known_gaps(request):
    """A mismatch a backend still has (tests/lean/backends.py KNOWN_GAPS) is a strict xfail: it
    must keep failing until fixed, and then its entry must go."""
    name = request.node.callspec.params.get("name") if hasattr(request.node, "callspec") else None
    reason = KNOWN_GAPS.get((request.node.originalname, name))
    if reason:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))


@contextmanager
def harness(name, store, tmp_path, projects=None, **settings):
    factory = FACTORIES.get(name)
    if factory is None:
        pytest.fail(f"backend {name!r} is registered but has no factory in tests/lean/backends.py: add one")
    with factory(store, tmp_path, projects or {}, **settings) as h:
        yield h


# Backends whose Lean process (repl) or Dojo worker (leandojo) takes a while to start: the tests
# that set no settings of their own and assert nothing about a start share one harness each per
# module (`shared`), its faults cleared before and after each test; the others open their own.
# The kimina server is one per session already (tests/doubles/kimina_server.py); replay starts nothing.
SHARED = ("repl", "leandojo")


@pytest.fixture(scope="module")
def shared(store, tmp_path_factory):
    with ExitStack() as stack:
        opened = {}

        def get(name):
            if name not in opened:
                folder = tmp_path_factory.mktemp(f"shared-{name}")
                opened[name] = stack.enter_context(harness(name, store, folder, workers=1))
            return opened[name]

        yield get


@contextmanager
def default_harness(name, store, tmp_path, shared, workers: int = 1):
    """The backend with default settings (one worker: BackendSettings' default, named for the
    tests that need it): the module's shared one where it has one (SHARED)."""
    if name not in SHARED:
        with harness(name, store, tmp_path, workers=workers) as h:
            yield h
        return
    h = shared(name)
    h.double.faults()
    try:
        yield h
    finally:
        h.double.faults()


def needs_double(h):
    if h.double is None:
        pytest.skip(f"{h.name}: no Lean process double behind this backend to inject faults into")


def needs(h, capability: str):
    """Skip where the backend has no counterpart of what the test exercises (Harness.lacks says why)."""
    if capability in h.lacks:
        pytest.skip(f"{h.name}: {h.lacks[capability]}")


def needs_tactics(name):
    if not backends()[name].tactic_mode:
        pytest.skip(f"{name} checks whole proofs only")


def outcome(check, proof: str) -> str:
    """What a caller acts on: "proved", "not proved" (rejected, or accepted through sorry),
    "unverified" (finished where the backend cannot establish the verdict rule: the Dojo), or
    "error" (not checked: never a verdict on the proof)."""
    if check.error is not None:
        return "error"
    verdict = judge(check, proof)
    return {"proved": "proved", "unverified": "unverified"}.get(verdict.status, "not proved")


def proved_by(name: str) -> str:
    """What a real proof gets from backend `name`: proved, or unverified from the Dojo, which
    reports no axioms and checks no statement (tasks/lean/verdict.py)."""
    return "unverified" if name == "leandojo" else "proved"


def test_same_theorems_and_proofs_give_the_same_verdicts(name, store, theorems, tmp_path, shared):
    cases = [
        (AND_SWAP, "\n".join(AND_SWAP_PROOF), "proved"),  # a multi-tactic proof
        (IS_EVEN_ADD, "\n".join(IS_EVEN_ADD_PROOF), "proved"),
        (AND_SWAP, "intro h\nexact h", "not proved"),
        (AND_SWAP, "sorry", "not proved"),
        (AND_SWAP, "intro h\nnative_decide", "not proved"),
    ]
    with default_harness(name, store, tmp_path, shared) as h:
        got = [
            outcome(c, p)
            for c, (_, p, _) in zip(check_proofs(h.backend, [(theorems[t], p) for t, p, _ in cases]), cases)
        ]
    assert got == [proved_by(name) if want == "proved" else want for _, _, want in cases]


def test_tactic_steps_reach_the_end_of_a_proof(name, store, theorems, tmp_path, shared):
    needs_tactics(name)
    theorem = theorems[AND_SWAP]
    with default_harness(name, store, tmp_path, shared) as h:
        start = h.backend.start(theorem)
        assert start.status == "state" and "⊢ p ∧ q → q ∧ p" in start.state.goals.replace("\n", " ")
        assert h.backend.run_tactic(theorem, start.state, "exact h.2").status == "error"
        state = start.state
        for i, tactic in enumerate(AND_SWAP_PROOF):
            step = h.backend.run_tactic(theorem, state, tactic)
            assert step.status == ("finished" if i == len(AND_SWAP_PROOF) - 1 else "state"), (tactic, step)
            state = step.state


def test_a_file_without_imports_checked_twice_on_one_process(name, store, theorems, tmp_path, shared):
    """Conformance #8: nothing of one check's environment leaks into the next (no "already declared")."""
    items = [
        (theorems[AND_SWAP], "\n".join(AND_SWAP_PROOF)),
        (theorems[CONTRAPOSITIVE], "\n".join(CONTRAPOSITIVE_PROOF)),
    ] * 2
    with default_harness(name, store, tmp_path, shared, workers=1) as h:
        checks = check_proofs(h.backend, items)
    assert [outcome(c, p) for c, (_, p) in zip(checks, items)] == [proved_by(name)] * 4, checks


def test_a_module_header_is_handled_not_a_rejection(name, store, theorems, tmp_path):
    """Conformance #10: Lean (lean4#8174 to #13117) refuses `#print axioms` in a `module`."""
    copy = tmp_path / "LogicPuzzles"
    shutil.copytree(SAMPLE_ROOT / "lean" / "LogicPuzzles", copy)
    props = copy / "LogicPuzzles" / "Props.lean"
    props.write_text("module\n\n" + props.read_text())
    proof = "\n".join(AND_SWAP_PROOF)
    with harness(name, store, tmp_path, projects={"LogicPuzzles": str(copy)}) as h:
        check = h.backend.check_proof(theorems[AND_SWAP], proof)
        wrong = h.backend.check_proof(theorems[AND_SWAP], "intro h\nexact h")
    assert outcome(check, proof) == proved_by(name), check
    assert outcome(wrong, "intro h\nexact h") == "not proved" and wrong.error is None
    if h.double is not None:
        assert "module" in h.double.received()  # the header Lean saw had it


def test_a_private_theorem_is_checked_by_the_name_its_proof_declares(name, store, theorems, tmp_path, shared):
    """Issue 16 review: the proof command declares the theorem without its `private` (modifiers do
    not change what is proved), so the statement check names it as the statement does, resolved
    in the header's namespace as Lean resolves names (ResolveName.lean), never as
    `_private.M.0.N`, which the check text cannot reach: that was a rejection of every private
    theorem."""
    if name in ("replay", "leandojo"):
        pytest.skip(f"{name} finds a theorem by its traced full_name and sends Lean no statement check")
    spec = theorems[AND_SWAP]
    private = replace(
        spec,
        full_name="_private.LogicPuzzles.Props.0." + spec.full_name,
        statement="private " + spec.statement,
    )
    proof = "\n".join(AND_SWAP_PROOF)
    with default_harness(name, store, tmp_path, shared) as h:
        check = h.backend.check_proof(private, proof)
        wrong = h.backend.check_proof(private, "intro h\nexact h")
    assert outcome(check, proof) == "proved", check
    assert outcome(wrong, "intro h\nexact h") == "not proved" and wrong.error is None


def test_a_statement_that_declares_another_constant_than_full_name_is_bad_input(
    name, store, theorems, tmp_path, shared
):
    """Issue 16 review: a record filed under another constant's name (`Nat.one_mul` for a statement
    declaring `one_mul'`) had its statement and axioms checked on that other constant; whatever
    the proof declared (a sorry-laden helper's use) was called proved. It is bad input now."""
    if name == "replay":
        pytest.skip("replay builds no Lean command from the statement")
    spec = replace(theorems[AND_SWAP], full_name=CONTRAPOSITIVE)
    proof = "\n".join(AND_SWAP_PROOF)
    with default_harness(name, store, tmp_path, shared) as h:
        check = h.backend.check_proof(spec, proof)
    assert check.error is not None and "declares `and_swap'`" in check.error, check
    assert judge(check, proof).status == "error"


def test_a_tactic_that_answers_after_its_timeout_is_never_read_later(name, store, theorems, tmp_path):
    """Conformance #1: the late answer of a timed-out tactic must not become the next tactic's."""
    needs_tactics(name)
    theorem = theorems[AND_SWAP]
    with harness(name, store, tmp_path, tactic_timeout_s=1) as h:
        needs_double(h)
        start = h.backend.start(theorem)
        after_intro = h.backend.run_tactic(theorem, start.state, "intro h")
        # late on every try (a backend may retry a hung tactic once on a fresh process)
        h.double.faults({"when": '"constructor"', "do": "late", "seconds": 3, "times": 2})
        late = h.backend.run_tactic(theorem, after_intro.state, "constructor")
        assert late.status in ("timeout", "error") and late.state is None, late
        # "exact h.2" does not close `q ∧ p`: if the late answer of `constructor` were read here,
        # it would pass for this one's.
        assert h.backend.run_tactic(theorem, after_intro.state, "exact h.2").status == "error"
        assert h.backend.run_tactic(theorem, after_intro.state, "constructor").status == "state"


def test_a_restart_for_memory_between_two_calls_is_not_a_rejection(name, store, theorems, tmp_path):
    """Conformance #2: LeanInteract restarts a REPL over 0.8 x its memory limit inside `run()`, and
    the new process does not know the old ids ("Unknown environment." / "Unknown proof state.")."""
    theorem = theorems[AND_SWAP]
    proof = "\n".join(AND_SWAP_PROOF)
    with harness(name, store, tmp_path, memory_limit_mb=512) as h:
        needs_double(h)
        needs(h, "memory_restart")
        grow = {"do": "grow_memory", "rss_mb": 450, "times": 1}
        h.double.faults({"when": "#print axioms", **grow})
        first = h.backend.check_proof(theorem, proof)
        second = h.backend.check_proof(theorem, proof)  # the process is over the limit: restarted first
        assert [outcome(first, proof), outcome(second, proof)] == [proved_by(name), proved_by(name)], second
        if backends()[name].tactic_mode:
            start = h.backend.start(theorem)
            h.double.faults({"when": '"tactic"', **grow})
            step = h.backend.run_tactic(theorem, start.state, "intro h")
            step = h.backend.run_tactic(theorem, step.state, "constructor")  # restarted before this one
            assert step.status == "state" and step.state.goals.count("⊢") == 2, step
    assert len(h.double.pids()) >= 3  # the restarts happened, for real, in LeanInteract


def test_a_process_that_crashes_in_the_middle_of_a_batch_changes_no_verdict(name, store, theorems, tmp_path):
    items = [
        (theorems[AND_SWAP], "\n".join(AND_SWAP_PROOF)),
        (theorems[IS_EVEN_ADD], "\n".join(IS_EVEN_ADD_PROOF)),
        (theorems[AND_SWAP], "intro h\nexact h"),
    ]
    with harness(name, store, tmp_path) as h:
        needs_double(h)
        h.double.faults({"when": "obtain ⟨b, hb⟩", "do": "crash", "times": 1})
        checks = check_proofs(h.backend, items)
    assert [outcome(c, p) for c, (_, p) in zip(checks, items)] == [proved_by(name), proved_by(name), "not proved"], (
        checks
    )
    assert len(h.double.pids()) >= 2


def test_a_snippet_that_kills_its_process_is_an_error_and_spares_the_others(name, store, theorems, tmp_path, shared):
    killer = "intro h\ndouble_crash"
    items = [
        (theorems[AND_SWAP], "\n".join(AND_SWAP_PROOF)),
        (theorems[AND_SWAP], killer),
        (theorems[CONTRAPOSITIVE], "\n".join(CONTRAPOSITIVE_PROOF)),
    ]
    with default_harness(name, store, tmp_path, shared) as h:
        needs_double(h)
        checks = check_proofs(h.backend, items)
    assert [outcome(c, p) for c, (_, p) in zip(checks, items)] == [proved_by(name), "error", proved_by(name)], checks
    assert "crash" in checks[1].error


def test_garbage_answers_are_retried_then_an_error_never_a_verdict(name, store, theorems, tmp_path, shared):
    proof = "\n".join(AND_SWAP_PROOF)
    with default_harness(name, store, tmp_path, shared) as h:
        needs_double(h)
        needs(h, "print_axioms")
        h.double.faults({"when": "#print axioms", "do": "garbage", "times": 1})
        once = h.backend.check_proof(theorems[AND_SWAP], proof)
        h.double.faults({"when": "#print axioms", "do": "garbage"})
        always = h.backend.check_proof(theorems[AND_SWAP], proof)
    assert outcome(once, proof) == proved_by(name), once
    assert outcome(always, proof) == "error" and not always.accepted, always


def test_a_bad_api_key_fails_preflight_with_the_fix(name, store, tmp_path, shared):
    from storage.errors import InputError
    from tasks.lean import preflight

    with default_harness(name, store, tmp_path, shared) as h:
        if h.bad_key_settings is None:
            pytest.skip(f"{name} takes no API key")
        with pytest.raises(InputError, match="key"):
            preflight(h.bad_key_settings)
