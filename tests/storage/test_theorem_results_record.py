"""storage.theorem_results.record_results writes a call's rows in a few INSERTs, not one per row
(storage/catalog.py insert_or_replace; DuckDB's executemany cost 4-8 ms of CPU a row): the rows
read back as one-at-a-time inserts left them, the last row of a repeated key included."""

from __future__ import annotations

from storage import catalog, theorem_results


def _row(theorem: str, c: int, prover: str = "model") -> dict:
    return {"repo_id": "r1", "theorem_id": theorem, "full_name": theorem, "split": "test", "prover": prover,
            "status": "tried", "n": 1, "c": c, "k": 1, "pass_at_1": float(c), "pass_at_k": float(c)}  # fmt: skip


def test_a_call_over_several_inserts_keeps_every_row_and_the_last_of_a_repeated_key(store, monkeypatch):
    monkeypatch.setattr(catalog, "ROWS_PER_INSERT", 2)  # 4 distinct keys: 2 statements
    rows = [
        _row("t1", 0),
        _row("t1", 1),
        _row("t2", 1),
        _row("t1", 0, prover="baseline"),
        _row("t3", 1),
    ]  # t1 twice in one statement's rows
    assert theorem_results.record_results(store, rows, "run-1", 1, "ck1", "random") == 5
    back = {(r["theorem_id"], r["prover"]): r["c"] for r in theorem_results.read_results(store, "run-1")}
    assert back == {("t1", "model"): 1, ("t2", "model"): 1, ("t1", "baseline"): 0, ("t3", "model"): 1}
