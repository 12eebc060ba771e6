"""The verification cache (tasks/lean/verified.py, storage/verification_cache.py) over the real
repl backend (LeanInteract) with the Lean process double behind it: what reaches the double is
counted from its request log, so "never reached Lean" is observed, not assumed.

    PYTHONPATH=$PWD .venv/bin/python -m pytest tests/tasks/test_lean_verified.py -q
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass

import pytest

from storage import verification_cache
from storage.sample import SAMPLE_ROOT
from tasks.lean import BackendSettings, ProofCheck, judge
from tasks.lean.verified import (
    VerifiedBackend,
    _decode,
    check_from_json,
    check_to_json,
    header_text,
    normalise_proof,
    open_verifier,
)
from tests.doubles.lean_process import make_repl_double
from tests.doubles.sample_store import store, theorems  # noqa: F401  (fixtures)

SQUARE_ADD = "unfold square\nsimp only [Nat.add_mul, Nat.mul_add, Nat.two_mul, Nat.mul_comm b a]\nomega"


def checks_sent(double) -> list[str]:
    """The whole-proof commands that reached the Lean process double (each ends in `#print axioms`)."""
    return [r["request"] for r in double.requests() if "#print axioms" in r["request"]]


def settings_for(double, tmp_path, **repl) -> BackendSettings:
    return BackendSettings(
        kind="repl", work_dir=str(tmp_path / "work"), repl=double.options(**repl), sandbox=double.sandbox()
    )


@pytest.fixture(scope="module")
def _module_lean(store, tmp_path_factory):
    """One Lean process double and one repl backend (LeanInteract) for the module: starting them
    (the REPL process, the sandbox launchers, LeanInteract's setup) cost about 0.5 s of CPU per test.
    No test here asserts anything about a start; each reads only the requests sent during it (`double`)
    and keys the cache under a rule version of its own (`verifier`)."""
    folder = tmp_path_factory.mktemp("verified")
    double = make_repl_double(folder / "double")
    backend = open_verifier(settings_for(double, folder), store)
    yield double, backend
    backend.close()


@dataclass(frozen=True)
class ThisTest:
    """The module's double as one test sees it: the requests sent since the test began; faults
    set by the test are cleared after it (`double`)."""

    double: object
    since: int

    def requests(self) -> list[dict]:
        return self.double.requests()[self.since :]

    def __getattr__(self, name):  # options, sandbox, faults, paths: the module double's
        return getattr(self.double, name)


@pytest.fixture
def double(_module_lean):
    shared, _ = _module_lean
    shared.faults()
    yield ThisTest(shared, len(shared.requests()))
    shared.faults()


@pytest.fixture
def verifier(store, double, _module_lean, request):
    """The verification cache over the module's repl backend, as `open_verifier` builds it, with this
    test's own counts; the store is shared by the module: keys of this test only."""
    _, shared = _module_lean
    backend = VerifiedBackend(shared.backend, store, shared.header_of, rule_version=f"test-{request.node.name}")
    if shared.gold is not None:
        backend.use_gold(shared.gold)
    yield backend
    backend.flush()  # the backend below stays open for the next test


def test_the_second_check_of_the_same_proof_never_reaches_the_double(store, theorems, double, verifier):
    theorem = theorems["NatBasics.square_add"]
    first = verifier.check_proof(theorem, SQUARE_ADD)
    assert judge(first, SQUARE_ADD).proved and first.axioms == ("propext",)
    assert len(checks_sent(double)) == 1
    # the same proof with blank lines around it: Lean is sent the same command
    again = verifier.check_proof(theorem, "\n" + SQUARE_ADD + "\n\n")
    assert again == first and judge(again, SQUARE_ADD).proved
    # with CRLF line ends it is no canonical text: rejected with the reason, never sent, never cached
    crlf = verifier.check_proof(theorem, SQUARE_ADD.replace("\n", "\r\n"))
    assert not crlf.accepted and "U+000D" in crlf.messages[0] and judge(crlf, SQUARE_ADD).status == "rejected"
    assert len(checks_sent(double)) == 1
    assert verifier.stats.hits == 1 and verifier.stats.misses == 1
    verifier.flush()  # answers are written in batches
    assert verifier.stats.stored == 1
    row = verification_cache.lookup(store, verifier.key(theorem, SQUARE_ADD))
    assert (row.backend, row.verdict, row.axioms) == ("repl", "proved", ("propext",))


def test_rejections_are_cached_too(store, theorems, double, verifier):
    theorem = theorems["NatBasics.square_add"]
    for _ in range(2):
        check = verifier.check_proof(theorem, "unfold square\nrfl")
        assert not check.accepted and check.error is None
    assert len(checks_sent(double)) == 1
    verifier.flush()
    assert verification_cache.lookup(store, verifier.key(theorem, "unfold square\nrfl")).verdict == "rejected"


def test_another_statement_rule_version_or_header_reaches_the_double(store, theorems, double, verifier, tmp_path):
    square, formula = theorems["NatBasics.square_add"], theorems["NatBasics.sumTo_formula"]
    verifier.check_proof(square, SQUARE_ADD)
    verifier.check_proof(formula, SQUARE_ADD)  # another statement
    assert len(checks_sent(double)) == 2
    # another rule version: the same backend, the same proof, a new key
    newer = VerifiedBackend(verifier.backend, store, verifier.header_of, rule_version="a-newer-rule")
    newer.check_proof(square, SQUARE_ADD)
    assert len(checks_sent(double)) == 3 and newer.stats.hits == 0
    # another header: a checkout whose file before the theorem differs by a comment
    checkout = tmp_path / "NatBasics"
    shutil.copytree(SAMPLE_ROOT / "lean" / "NatBasics", checkout)
    source = checkout / square.file_path
    lines = source.read_text().splitlines(keepends=True)
    lines[0] = lines[0].rstrip("\n") + "  -- a header that changed\n"
    source.write_text("".join(lines))
    moved = open_verifier(settings_for(double, tmp_path, projects={"NatBasics": str(checkout)}), store)
    moved.rule_version = verifier.rule_version
    try:
        assert moved.key(square, SQUARE_ADD).header_hash != verifier.key(square, SQUARE_ADD).header_hash
        moved.check_proof(square, SQUARE_ADD)
        assert len(checks_sent(double)) == 4 and moved.stats.hits == 0
    finally:
        moved.close()
    verifier.check_proof(square, SQUARE_ADD)  # the first key still answers
    assert len(checks_sent(double)) == 4


def test_an_infrastructure_error_is_not_cached(store, theorems, double, verifier):
    theorem = theorems["NatBasics.square_add"]
    double.faults({"when": "#print axioms", "do": "crash", "times": 2})  # the check and its retry
    failed = verifier.check_proof(theorem, SQUARE_ADD)
    assert failed.error is not None and not failed.accepted
    verifier.flush()
    assert verification_cache.lookup(store, verifier.key(theorem, SQUARE_ADD)) is None
    assert verifier.stats.uncached == 1 and verifier.stats.stored == 0
    after = verifier.check_proof(theorem, SQUARE_ADD)  # Lean is asked again, and answers
    assert after.error is None and judge(after, SQUARE_ADD).proved
    assert len(checks_sent(double)) == 3


def test_text_the_guard_refuses_is_neither_sent_nor_cached(store, theorems, double, verifier):
    before = verification_cache.count(store)
    check = verifier.check_proof(theorems["NatBasics.square_add"], "run_tac Lean.Elab.Tactic.evalTactic default")
    assert not check.accepted and "not sent to Lean" in check.messages[0]
    verifier.flush()
    assert checks_sent(double) == [] and verification_cache.count(store) == before


def test_another_process_reads_the_answers_from_the_catalog(store, theorems, double, verifier, tmp_path):
    """A verifier opened later (another process, another Lean process double) is answered by the
    catalog: what the first stored at its sync never reaches the second double."""
    theorem = theorems["NatBasics.square_add"]
    verifier.check_proof(theorem, SQUARE_ADD)
    verifier.flush()
    other_double = make_repl_double(tmp_path / "other-double")
    other = open_verifier(settings_for(other_double, tmp_path), store)
    other.rule_version = verifier.rule_version
    try:
        assert judge(other.check_proof(theorem, SQUARE_ADD), SQUARE_ADD).proved
    finally:
        other.close()
    assert checks_sent(other_double) == [] and other.stats.hits == 1


def test_replay_is_not_wrapped(store):
    assert not isinstance(open_verifier(BackendSettings(kind="replay"), store), VerifiedBackend)


def test_the_cache_is_shared_by_search_and_rewards(store, theorems, double, verifier):
    """One proof found by whole-proof search, then rewarded by GRPO's Lean reward: Lean is asked once."""
    from tasks.grpo.config import RewardSettings
    from tasks.grpo.rewards import LeanRewarder
    from tasks.search.result import SearchBudget
    from tasks.search.whole_proof import whole_proof_search
    from tests.tasks.test_search import ScriptedGenerator

    theorem = theorems["NatBasics.square_add"]
    found = whole_proof_search(
        theorem, verifier, ScriptedGenerator({}, [(SQUARE_ADD, 0.0)]), SearchBudget(num_tactics=1)
    )
    assert found.stopped == "proved"
    rewarder = LeanRewarder(verifier, RewardSettings())
    try:
        theorem_json = json.dumps(theorem.__dict__)
        for _ in range(2):  # the rewarder's own memo keeps tactic outcomes only: both go to the shared cache
            outcome = rewarder.map(rewarder.proof_outcome, [(theorem_json, f"by\n{SQUARE_ADD}")])[0]
            assert outcome.verdict == "proved" and outcome.accepted
    finally:
        rewarder.close()
    assert len(checks_sent(double)) == 1 and verifier.stats.hits == 2


@pytest.mark.parametrize(
    "a, b, same",
    [
        ("simp\nomega", "\nsimp\nomega\n\n", True),  # blank lines around it: the same command
        ("simp\nomega", "  simp\n  omega", False),  # re-indenting is not Lean's rule (strings span lines)
        ("simp\nomega", "simp omega", False),  # not the same text: one tactic with an argument
        ("constructor\n· simp\n· omega", "constructor\n· simp\n  · omega", False),  # indentation in the block is syntax
    ],
)
def test_normalise_proof(a, b, same):
    assert (normalise_proof(a) == normalise_proof(b)) is same


@dataclass(frozen=True)
class _Inner:
    text: str
    line: int | None = None


@dataclass(frozen=True)
class _Outer:
    name: str
    inner: _Inner
    items: tuple[_Inner, ...] = ()
    maybe: _Inner | None = None


def test_checks_and_nested_answers_survive_json():
    check = ProofCheck(True, "repl", ("warning: w",), ("propext",))
    assert check_from_json(json.loads(json.dumps(check_to_json(check)))) == check
    outer = _Outer("T", _Inner("a", 1), (_Inner("b"),), None)
    from dataclasses import asdict

    assert _decode(_Outer, json.loads(json.dumps(asdict(outer)))) == outer


def test_the_header_is_the_file_prefix_from_the_checkout(theorems, double, tmp_path):
    theorem = theorems["NatBasics.square_add"]
    text = header_text(settings_for(double, tmp_path), theorem)
    assert text.startswith("import ") and "square_add" not in text.split("\n")[-1]
    kimina = BackendSettings(kind="kimina", kimina={"header": "import Mathlib"})
    assert header_text(kimina, theorem) == "import Mathlib"


def test_a_locked_catalog_delays_the_sync_and_fails_no_check(store, theorems, double, verifier):
    from storage.lock import file_lock

    theorem = theorems["NatBasics.square_add"]
    verifier.check_proof(theorem, "unfold square\nrfl")  # the first load, before the lock is taken
    verifier.sync_every, verifier.sync_timeout_s = 1, 0.2
    with file_lock(store.root / "catalog.lock"):  # another writer holds the catalog
        check = verifier.check_proof(theorem, SQUARE_ADD)
        assert judge(check, SQUARE_ADD).proved
    assert verification_cache.lookup(store, verifier.key(theorem, SQUARE_ADD)) is None  # kept, not lost
    verifier.flush()
    assert verification_cache.lookup(store, verifier.key(theorem, SQUARE_ADD)).verdict == "proved"


def test_grpo_rewards_open_their_backend_through_the_cache(store, double, tmp_path):
    from tasks.grpo.train import as_settings, open_reward_backend

    backend_settings = settings_for(double, tmp_path).model_dump()
    backend = open_reward_backend(as_settings({"backend": backend_settings}), store)
    try:
        assert isinstance(backend, VerifiedBackend)
    finally:
        backend.close()


class StepsReplay:
    """The real replay backend with a `check_steps` (as the leandojo backend has: a proof given as
    the tactics search found), counting what reaches it."""

    def __init__(self, inner):
        self.inner, self.name, self.steps = inner, inner.name, []

    def check_steps(self, theorem, tactics):
        self.steps.append(tuple(tactics))
        return self.inner.check_proof(theorem, "\n".join(tactics))

    def check_proof(self, theorem, proof):
        return self.inner.check_proof(theorem, proof)

    def close(self):
        self.inner.close()


def test_check_steps_of_a_backend_that_has_it_go_through_the_cache(store, theorems):
    from tasks.lean import open_backend

    inner = StepsReplay(open_backend(BackendSettings(kind="replay"), store))
    verifier = VerifiedBackend(inner, store, lambda t: t.file_path, rule_version="test-steps")
    theorem = theorems["NatBasics.square_add"]
    steps = tuple(SQUARE_ADD.split("\n"))
    first = verifier.check_steps(theorem, steps)  # best-first search calls it where it exists
    assert verifier.check_steps(theorem, steps) == first
    assert inner.steps == [steps] and verifier.stats.hits == 1
    assert not hasattr(VerifiedBackend(open_backend(BackendSettings(kind="replay"), store), store, str), "check_steps")


def test_kimina_batches_go_through_the_cache(store, theorems, kimina, monkeypatch):
    """The real kimina server (tests/doubles/kimina_server.py) with the Lean process double behind
    it: a batch checked twice sends its snippets to the server once."""
    from tests.doubles.kimina_server import API_KEY

    monkeypatch.setenv("LEAN_SERVER_API_KEY", API_KEY)
    kimina.repl.faults()
    settings = BackendSettings(kind="kimina", theorem_timeout_s=20, kimina={"url": kimina.url})
    verifier = open_verifier(settings, store)
    verifier.rule_version = "test-kimina-batches"
    items = [(theorems["NatBasics.square_add"], SQUARE_ADD), (theorems["NatBasics.square_add"], "unfold square\nrfl")]
    try:
        before = len(checks_sent(kimina.repl))
        first = verifier.check_proofs(items)
        sent = len(checks_sent(kimina.repl))
        assert sent - before == 2 and judge(first[0], SQUARE_ADD).proved and not first[1].accepted
        assert verifier.check_proofs(items) == first
        assert len(checks_sent(kimina.repl)) == sent and verifier.stats.hits == 2
    finally:
        verifier.close()


def test_the_cache_keys_on_the_rule_version_the_run_ledger_records(store, double, tmp_path):
    from tasks.ledger import VERIFIER_RULE_VERSION

    backend = open_verifier(settings_for(double, tmp_path), store)
    try:
        assert backend.rule_version == VERIFIER_RULE_VERSION
    finally:
        backend.close()


def test_the_ledger_never_guesses_the_rule_version_when_the_verdict_module_fails_to_import():
    """Issue 16 review: tasks/ledger.py fell back to "guard-1" when importing tasks.lean.verdict
    failed, so a broken verifier was recorded as an old rule. The import failure is the error."""
    import subprocess
    import sys

    code = "import sys; sys.modules['tasks.lean.verdict'] = None; import tasks.ledger"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode != 0 and "tasks.lean.verdict" in run.stderr.splitlines()[-1], run.stderr[-500:]


def test_a_huge_answer_is_stored_capped_and_once():
    """Issue 27 §4: a proof can make Lean print megabytes; the cache stored every message twice
    (the check's `messages` and each command's answer), whole. Now each is cut to
    MAX_STORED_MESSAGE_CHARS and kept once (the answers), and the verdict read back is the same."""
    from tasks.lean.verdict import Answer, Message, judge, proof_check
    from tasks.lean.verified import MAX_STORED_MESSAGE_CHARS

    flood = Message("error", "trace: " + "x" * 1_000_000, 2)
    check = proof_check("repl", "T", Answer((flood,)))
    data = check_to_json(check)
    assert "messages" not in data and len(json.dumps(data)) < 2 * MAX_STORED_MESSAGE_CHARS
    back = check_from_json(json.loads(json.dumps(data)))
    assert back.messages and len(back.messages[0]) < MAX_STORED_MESSAGE_CHARS + 100
    assert judge(back, "simp").status == judge(check, "simp").status == "rejected"
