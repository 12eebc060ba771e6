"""The proving evaluation counts right (issue 17, §4): theorems without a statement are
tried where the backend needs none and named where it cannot try them; ReProver's rule for
errors; each theorem charged its own share of a batched generation round; the
closing-tactics baseline beside every pass rate; intervals and the number of theorems.
Replay decides every proof here (no Lean), and the metrics say `replay`.

    PYTHONPATH=$PWD HF_HUB_OFFLINE=1 .venv/bin/python -m pytest tests/tasks/test_proving_counts.py -q
"""

from __future__ import annotations

import json
import re
import shutil

import pytest

from storage.errors import InputError
from storage.leandojo import import_export
from storage.sample import sample_export_dirs
from storage.store import Store
from tasks.generate.baseline import CLOSING_TACTICS, ClosingTacticsGenerator
from tasks.lean.backend import ProofCheck, ProofState, TacticResult, TheoremSpec
from tasks.proving.config import ProvingSettings
from tasks.proving.evaluate import prove_theorems, proving_metrics, require_theorems, select_theorems, theorem_rows
from tasks.proving.summary import proving_lines
from tasks.search import SearchBudget, best_first_search_many
from tests.doubles.sample_store import sample_store


def _export_without_statements(src, dst):
    """A copy of a sample export as the LeanDojo Benchmark's own files are: no
    `theorem_statement` fields, and corpus entries for the definitions only."""
    shutil.copytree(src, dst)
    for split_file in dst.glob("*/*.json"):
        records = json.loads(split_file.read_text())
        for r in records:
            r.pop("theorem_statement", None)
        split_file.write_text(json.dumps(records))
    lines = []
    for line in (dst / "corpus.jsonl").read_text().splitlines():
        entry = json.loads(line)
        entry["premises"] = [p for p in entry["premises"] if p.get("kind") not in ("theorem", "lemma")]
        lines.append(json.dumps(entry))
    (dst / "corpus.jsonl").write_text("\n".join(lines) + "\n")
    return dst


@pytest.fixture(scope="module")
def unstated(tmp_path_factory):
    """A store of the sample's NatBasics imported without any statement."""
    tmp = tmp_path_factory.mktemp("unstated")
    src = next(d for d in sample_export_dirs() if d.name == "NatBasics")
    store = Store.open(tmp / "home")
    import_export(store, _export_without_statements(src, tmp / "NatBasics"))
    return store


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return sample_store(tmp_path_factory.mktemp("home"))


def test_an_export_without_statements_is_tried_by_replay_which_needs_none(unstated):
    settings = ProvingSettings(splits=["train", "test"], max_theorems=None)
    selection = select_theorems(unstated, unstated.repo_ids(), "random", settings)
    assert selection.theorems and selection.untried == ()  # before: 0 theorems, and the run "completed"


def test_lean_backends_read_the_statement_from_the_traced_files_source(unstated):
    settings = ProvingSettings(backend={"kind": "repl"}, splits=["train", "test"], max_theorems=None)
    chosen = select_theorems(unstated, unstated.repo_ids(), "random", settings).theorems
    by_name = {t.full_name: t for t in chosen}
    # storage/sample/lean/NatBasics/NatBasics/Add.lean, the sample's own checkout
    assert by_name["NatBasics.add_eq_zero_left"].statement == (
        "theorem add_eq_zero_left (n m : Nat) (h : n + m = 0) : n = 0"
    )


def test_theorems_that_cannot_be_tried_are_counted_named_and_none_fails_the_step(unstated, tmp_path):
    empty = tmp_path / "not-a-checkout"
    empty.mkdir()
    settings = ProvingSettings(backend={"kind": "repl", "repl": {"projects": {"NatBasics": str(empty)}}})
    selection = select_theorems(unstated, unstated.repo_ids(), "random", settings)
    assert selection.theorems == () and len(selection.untried) > 0
    assert all("no statement" in u.reason and u.full_name.startswith("NatBasics.") for u in selection.untried)
    with pytest.raises(InputError, match="selected no theorem to try: .* cannot be tried: .*NatBasics"):
        require_theorems(selection, unstated.repo_ids(), settings)
    rows = {m.metric: m for m in proving_metrics([], settings, selection.untried)}
    assert rows["proving_untried"].value == len(selection.untried)
    (line,) = proving_lines([], selection.untried)
    assert f"{len(selection.untried)} theorems cannot be tried" in line and "NatBasics." in line
    untried_rows = theorem_rows([], selection.untried, settings)
    assert {r["status"] for r in untried_rows} == {"untried"}


def _record(tid, n, c, errors=0, started=True):
    return {
        "repo_id": "r",
        "split": "test",
        "theorem_id": tid,
        "file_path": "F.lean",
        "full_name": f"T.{tid}",
        "checker": "replay",
        "generator": "g",
        "n": n,
        "c": c,
        "errors": errors,
        "error": "RuntimeError: crashed" if errors else None,
        "started": started,
        "expansions": 1.0,
        "seconds": 1.0,
    }


def test_reprover_rule_counts_a_theorem_proved_despite_an_error_and_drops_only_those_that_never_started():
    settings = ProvingSettings(attempts=2, k=2, generator={"decoding": "sample"})
    records = [
        _record("a", 2, 1, errors=1),  # one attempt crashed, the other proved it: proved
        _record("b", 2, 0, errors=2),  # started, then crashed: a failure to prove
        _record("c", 2, 0, errors=2, started=False),  # never started: left out of pass@k
        _record("d", 2, 0),
    ]
    rows = {m.metric: m for m in proving_metrics(records, settings)}
    assert rows["replay_pass@1"].value == pytest.approx(0.5 / 3) and rows["replay_pass@1"].count == 3
    assert rows["replay_pass@2"].value == pytest.approx(1 / 3)
    assert rows["proving_errors"].value == 3 and rows["proving_not_started"].value == 1
    assert rows["proving_theorems"].value == 4


def test_aggregates_carry_a_95_percent_interval_and_the_number_of_theorems():
    settings = ProvingSettings()
    records = [_record(f"t{i}", 1, int(i < 12)) for i in range(477)]
    row = next(m for m in proving_metrics(records, settings) if m.metric == "replay_pass@1")
    assert row.count == 477 and row.interval == "wilson"
    assert (row.ci_low, row.ci_high) == (0.01445, 0.04345) and row.ci_low < row.value < row.ci_high
    sampled = ProvingSettings(attempts=4, k=2, generator={"decoding": "sample"})
    records = [_record(f"t{i}", 4, i % 3) for i in range(30)]
    row = next(m for m in proving_metrics(records, sampled) if m.metric == "replay_pass@2")
    assert row.interval.startswith("bootstrap") and row.ci_low < row.value < row.ci_high
    assert row == next(m for m in proving_metrics(records, sampled) if m.metric == "replay_pass@2")  # seeded


class _Clock:
    """Stands in for `time` inside best_first: only generation advances it, one second per query."""

    def __init__(self):
        self.now = 0.0

    def perf_counter(self):
        return self.now


class _OneSecondPerQuery:
    name = "slow"

    def __init__(self, clock):
        self.clock = clock

    def generate(self, queries, k):
        self.clock.now += len(queries)  # batched generation costs the batch, not each theorem
        return [[("skip", -1.0)] for _ in queries]

    def reseed(self, seed):
        pass

    def close(self):
        pass


class _Deep:
    """Every tactic opens a new state; nothing finishes."""

    name = "deep"

    def __init__(self):
        self.count = 0

    def start(self, theorem):
        return TacticResult("state", ProofState("0", "⊢ 0"))

    def run_tactic(self, theorem, state, tactic):
        self.count += 1
        return TacticResult("state", ProofState(str(self.count), f"⊢ {self.count}"))

    def check_proof(self, theorem, proof):
        return ProofCheck(False, self.name)

    def close(self):
        pass


def test_each_theorem_is_charged_its_own_share_of_a_batched_round(monkeypatch):
    from tasks.search import best_first

    clock = _Clock()
    monkeypatch.setattr(best_first, "time", clock)
    budget = SearchBudget(num_tactics=1, max_expansions=3, timeout_s=100)
    theorems = [TheoremSpec("r", "u", "c", "F.lean", f"T.t{i}", f"theorem t{i} : True") for i in range(8)]
    alone = best_first_search_many(theorems[:1], _Deep(), _OneSecondPerQuery(clock), budget)[0]
    batched = best_first_search_many(theorems, _Deep(), _OneSecondPerQuery(clock), budget)
    assert alone.seconds == 3.0  # three rounds of one query
    assert [r.seconds for r in batched] == [3.0] * 8  # before: 24.0 each, the whole round eight times


def test_the_baseline_proposes_the_closing_tactics_and_is_measured_the_same_way(store):
    gen = ClosingTacticsGenerator()
    assert gen.generate([None], 3)[0] == [(t, pytest.approx(-0.01 * i)) for i, t in enumerate(CLOSING_TACTICS[:3])]
    settings = ProvingSettings(splits=["train", "test"], max_theorems=None)
    theorems = select_theorems(store, store.repo_ids(), "random", settings).theorems
    records = prove_theorems(store, settings, None, theorems, baseline=True)  # no checkpoint needed
    proved = {r.full_name for r in records if r.c}
    # NatBasics.add_eq_zero_left's traced proof is the single tactic `omega` (replay decides)
    assert "NatBasics.add_eq_zero_left" in proved and all(r.generator == gen.name for r in records)
    rows = {(m.repo_id, m.metric): m for m in proving_metrics(records, settings, baseline=True)}
    assert {metric for _, metric in rows} >= {"baseline_replay_pass@1", "baseline_proving_errors"}
    assert not any(metric == "replay_pass@1" for _, metric in rows)  # never confused with the model's


def test_prove_names_the_sorry_theorems_it_cannot_try_instead_of_trying_none(unstated, tmp_path):
    from tasks.proving.sorry import select_sorry_theorems

    empty = tmp_path / "not-a-checkout"
    empty.mkdir()
    settings = ProvingSettings(backend={"kind": "repl", "repl": {"projects": {"NatBasics": str(empty)}}})
    with pytest.raises(
        InputError, match=r"no `sorry` theorem can be tried: .* cannot be tried: .* no statement.*\(NatBasics\."
    ):
        select_sorry_theorems(unstated, unstated.repo_ids(), None, settings)  # before: "tried 0 sorry theorems"
    assert select_sorry_theorems(unstated, unstated.repo_ids(), None, ProvingSettings(backend={"kind": "repl"}))


def test_prove_keeps_the_sorry_theorems_it_cannot_try_beside_those_it_can(unstated, tmp_path):
    """Some `sorry` theorems can be tried, some cannot: the untried ones are named with their
    reasons, recorded, and listed in the card (before: dropped silently)."""
    from storage.sample import sample_lean_dirs
    from storage.theorem_results import record_results
    from tasks.card import sorry_section
    from tasks.proving.sorry import SORRY, select_sorry_theorems, sorry_rows

    checkout = tmp_path / "NatBasics"
    shutil.copytree(next(d for d in sample_lean_dirs() if d.name == "NatBasics"), checkout)
    (checkout / "NatBasics" / "Mul.lean").unlink()  # square_add's file: no statement for it
    settings = ProvingSettings(backend={"kind": "repl", "repl": {"projects": {"NatBasics": str(checkout)}}})
    untried: list[dict] = []
    tried = select_sorry_theorems(unstated, unstated.repo_ids(), None, settings, untried)
    assert [t.full_name for t in tried] == ["NatBasics.sumTo_formula"]
    assert [u.full_name for u in untried] == ["NatBasics.square_add"] and "no statement" in untried[0].reason
    record_results(unstated, sorry_rows([], settings, untried), "prove-1", 0, "ck", SORRY)
    card = "\n".join(sorry_section(unstated, "prove-1"))
    assert "not tried (1)" in card and "| NatBasics.square_add | untried |" in card and "no statement" in card


def test_the_untried_sentence_gives_every_reason_its_own_count_and_names():
    from tasks.proving.summary import untried_sentence

    untried = [
        {"full_name": "A", "reason": "no statement"},
        {"full_name": "B", "reason": "no statement"},
        {"full_name": "C", "reason": "no traced proof"},
    ]
    # before: "3 theorems cannot be tried (no statement): A, B, C", C's own reason lost
    assert untried_sentence(untried) == "3 theorems cannot be tried: 2 no statement (A, B); 1 no traced proof (C)"
    assert untried_sentence(untried, names_shown=1).startswith(
        "3 theorems cannot be tried: 2 no statement (A and 1 more)"
    )


def test_the_terminal_summary_names_the_theorems_that_could_not_be_tried():
    import io

    from rich.console import Console

    from flows.cli.terminal import print_summary

    result = {
        "run_id": "r",
        "report": "/x/report.md",
        "steps": [],
        "untried": [
            {"repo_id": "r", "split": "test", "full_name": "T.a", "reason": "no statement: none in the export"}
        ],
    }
    rows = [
        {
            "step": 1,
            "trainer": "proving",
            "repo_id": "r",
            "split": "test",
            "metric": "repl_pass@1",
            "value": 0.5,
            "count": 4,
            "ci_low": 0.15,
            "ci_high": 0.85,
        },
        {
            "step": 1,
            "trainer": "proving",
            "repo_id": "r",
            "split": "test",
            "metric": "baseline_repl_pass@1",
            "value": 0.25,
            "count": 4,
            "ci_low": 0.05,
            "ci_high": 0.7,
        },
        {
            "step": 1,
            "trainer": "proving",
            "repo_id": "r",
            "split": "test",
            "metric": "proving_untried",
            "value": 1.0,
            "count": 5,
        },
    ]
    out = io.StringIO()
    print_summary(Console(file=out, width=200), result, rows, None)
    text = out.getvalue()
    assert re.search(r"^1 +proving +repl_pass@1 r/test +0.5 \[0.15, 0.85\] \(n=4\) +0.25$", text, re.M), text
    assert "1 theorems cannot be tried: 1 no statement: none in the export (T.a)" in text
