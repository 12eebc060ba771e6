"""The results card of a run: headline metrics with their 95% intervals and the number of
theorems each is over, what each pass rate is comparable to, and the provenance a reader
needs to reproduce or cite them (tasks/ledger.py). Written as `card.md` beside the run's
report and published as an artifact; `card_diff` names every setting two runs differ in.

    dojoflow card RUN                     # writes <home>/reports/RUN/card.md and prints it
    dojoflow card RUN_A --against RUN_B   # every setting that differs
"""

from __future__ import annotations

import json
from pathlib import Path

from storage import atomic, catalog, metrics
from storage.ids import stable_hash
from storage.theorem_results import read_results

from .formatting import markdown_table as _table
from .lean.registry import is_lower_bound
from .ledger import backend_version, run_ledger, trainer_settings
from .metric_registry import baselines_of, below_baseline, is_size, read_meaning
from .proving.summary import fmt_aggregate, proving_section

CARD_FILE = "card.md"


BELOW = "**below baseline**"  # the mark of a figure worse than its baseline (tasks/metric_registry.py)


def _headline(rows: list[dict]) -> list[str]:
    """Each trainer's metrics at its last step (proving has its own section), each beside the
    baseline its declaration names, marked where it is below it."""
    last = {}
    for r in rows:
        last[r["trainer"]] = max(last.get(r["trainer"], r["step"]), r["step"])
    rows = [r for r in rows if r["trainer"] != "proving" and r["step"] == last[r["trainer"]] and not is_size(r)]
    bases = baselines_of(rows)
    beside = {id(b) for b in bases.values()}
    shown = [(r, bases.get(i)) for i, r in enumerate(rows) if id(r) not in beside]
    if not shown:
        return []
    out = ["## Headline metrics (each trainer's last step)", ""]
    out += _table(
        ["trainer", "step", "repository", "split", "metric", "value [95% CI] (n)", "baseline", ""],
        [
            [r["trainer"], r["step"], r["repository"], r["split"], r["metric"], fmt_aggregate(r)]
            + [f"{b['metric']} {fmt_aggregate(b)}" if b else "", BELOW if below_baseline(r, b) else ""]
            for r, b in shown
        ],
    )
    return out + [""]


def sorry_section(store, run_id: str, listed: int = 100) -> list[str]:
    """Markdown of a `dojoflow prove` run: each `sorry` theorem tried, its outcome and checker."""
    from .proving.sorry import SORRY

    every = [r for r in read_results(store, run_id) if r["split_kind"] == SORRY]
    if not every:
        return []
    rows = [r for r in every if r["status"] != "untried"]
    untried = [r for r in every if r["status"] == "untried"]
    proved = [r for r in rows if r["status"] == "proved"]
    checkers = sorted({r["checker"] for r in rows})
    title = f"## `sorry` theorems tried ({len(rows)})" + (f", not tried ({len(untried)})" if untried else "")
    out = [title, ""]
    out.append(
        f"Proved {len(proved)} of {len(rows)}, decided by {', '.join(f'`{c}`' for c in checkers) or 'none'}; "
        f"{sum(1 for r in rows if r['errors'])} with an attempt that ended in an error, "
        f"{sum(1 for r in rows if r['status'] == 'not_started')} not started"
        + (f"; {len(untried)} could not be tried (listed with their reasons)." if untried else ".")
        + (
            " `replay` re-finds traced proofs only, and a `sorry` theorem has none."
            if any(is_lower_bound(c) for c in checkers)
            else ""
        )
    )
    rows = rows + untried
    out.append("")
    out += _table(
        ["repository", "theorem", "status", "checker", "attempts n", "proofs c", "errors", "reason"],
        [
            [
                r.get("repo") or r["repo_id"],
                r["full_name"],
                r["status"],
                r["checker"],
                r["n"],
                r["c"],
                r["errors"],
                r["reason"] or "",
            ]
            for r in rows[:listed]
        ],
    )
    return out + [""]


def contamination_section(store, snapshot_ids: list[str], listed: int = 50) -> list[str]:
    """Markdown of the newest of `snapshot_ids` that has a contamination report: the
    benchmarks and their fingerprints, counts per repository and benchmark, and the list."""
    for sid in reversed(snapshot_ids):
        manifest = store.root / "snapshots" / sid / "manifest.json"
        rel = json.loads(manifest.read_text()).get("contamination") if manifest.is_file() else None
        if rel and (store.root / rel).is_file():
            report = json.loads((store.root / rel).read_text())
            break
    else:
        return []
    out = [f"## Contamination (snapshot `{sid}`)", ""]
    s = report["settings"]
    out.append(
        f"Checked {report['checked']} theorems ({report['without_statement']} without a statement) against "
        + (
            ", ".join(
                f"`{b['name']}` ({b['statements']} statements, fingerprint `{b['fingerprint']}`)"
                for b in report["benchmarks"]
            )
            or "no benchmark"
        )
        + f"; {s['ngram']}-gram overlap above {s['max_overlap']}, cross-repository copies "
        + ("checked" if s["cross_repository"] else "not checked")
        + f". Excluded from training: {len(report['excluded'])}."
    )
    out.append("")
    if report["counts"]:
        out += _table(
            ["repository", "copies of", "theorems excluded"],
            [[repo, what, n] for repo, per in sorted(report["counts"].items()) for what, n in sorted(per.items())],
        )
        out.append("")
        out += _table(
            ["repository", "theorem", "reason", "overlap"],
            [[e["repo_id"], e["full_name"], e["reason"], e["overlap"]] for e in report["excluded"][:listed]],
        )
        out.append("")
    return out


def _proving_settings(p: dict | None, prov: dict, toolchains: list[str]) -> list[str]:
    """The proving backend (and its version, the Lean toolchains), generator, sampling and budgets,
    one line (the full config follows)."""
    if not p:
        return []
    g, b = p.get("generator") or {}, p.get("backend") or {}
    rule = prov.get("verifier_rule_version")
    lean = f"Lean {', '.join(toolchains)}" if toolchains else "Lean toolchain not recorded in the export"
    return [
        f"- Proving: backend `{backend_version(b.get('kind'), prov)}`, {lean} (verifier rule `{rule}`), generator `{g.get('kind')}` "
        f"({g.get('decoding')} decoding, temperature {g.get('temperature')}), mode `{p.get('mode')}`, "
        f"{p.get('attempts')} attempts per theorem, k={p.get('k')}, seed {p.get('seed')}; budgets: "
        f"{p.get('num_tactics')} tactics per state, {p.get('max_expansions')} expansions, {p.get('timeout_s')} s "
        f"per theorem; at most {p.get('max_theorems')} theorems per repository and split ({', '.join(p.get('splits') or [])})"
    ]


def _gpu_and_tokens(compute: dict, gpu: str | None) -> str:
    """GPU seconds and tokens generated behind the numbers, or why there are none (never a 0 for "not counted")."""
    if compute.get("gpu_seconds") is not None:
        used = f"GPU {gpu}, {compute['gpu_seconds']} GPU seconds (wall seconds of GPU work times GPUs held)"
    else:
        used = f"GPU {gpu}, GPU seconds not recorded" if gpu else "no GPU (GPU seconds do not apply)"
    tokens = compute.get("tokens_generated")
    if tokens is None:
        return f"{used}; no tokens generated by a model"
    source = " and ".join(compute.get("tokens_from") or []) or "generation"
    return f"{used}; {int(tokens)} tokens generated ({source} behind these numbers)"


def _dirty(prov: dict) -> str:
    """Whether the tree had uncommitted changes to tracked files when the run started."""
    if not prov.get("git_commit"):
        return ""
    dirty = prov.get("git_dirty")
    if dirty is None:
        return " (dirty: not recorded)"
    return " (dirty: true, uncommitted changes to tracked files)" if dirty else " (dirty: false)"


def _provenance(led: dict) -> list[str]:
    run, prov = led["run"], led["provenance"] or {}
    env = prov.get("environment") or {}
    compute = led["compute"]
    out = ["## Provenance", ""]
    out += [
        f"- Run `{run['run_id']}`: flow `{run['flow']}`, status `{run['status']}`, started {run['started_at']}, "
        f"finished {run['finished_at']}",
        f"- Code: Dojoflow {prov.get('dojoflow_version', 'not recorded')}, git commit "
        f"`{prov.get('git_commit') or 'not a git checkout'}`{_dirty(prov)}; "
        f"verifier rule `{prov.get('verifier_rule_version', 'not recorded')}`",
        f"- Environment: Python {env.get('python', '?')} on {env.get('platform', '?')}, host {env.get('host', '?')}; "
        + ", ".join(f"{p} {v}" for p, v in sorted((env.get("packages") or {}).items())),
        f"- Compute: wall {compute['wall_seconds']} s, CPU {prov.get('cpu_seconds')} s of the run's process; "
        + _gpu_and_tokens(compute, prov.get("gpu")),
    ]
    toolchains = sorted(
        {r["lean_version"] for s in led["snapshots"] for r in s["repositories"] if r.get("lean_version")}
    )
    out += _proving_settings(led.get("proving"), prov, toolchains)
    out += ["", "### Data", ""]
    for s in led["snapshots"]:
        out += [f"Snapshot `{s['snapshot_id']}` (snapshot settings `{json.dumps(s['settings'], sort_keys=True)}`):", ""]
        out += _table(
            ["repository", "url", "commit", "Lean toolchain"],
            [
                [
                    r.get("name", r["repo_id"]),
                    r.get("url", ""),
                    r.get("commit", ""),
                    r.get("lean_version") or "not recorded in the export",
                ]
                for r in s["repositories"]
            ],
        )
        out.append("")
    out += ["### Checkpoints (each with its parent chain)", ""]
    out += _table(
        ["checkpoint", "trainer", "snapshot", "parents"],
        [
            [
                f"`{cid}`",
                chain[0]["trainer"],
                f"`{chain[0]['snapshot_id']}`",
                " ← ".join(f"`{c['checkpoint_id']}`" for c in chain[1:]) or "none",
            ]
            for cid, chain in sorted(led["checkpoints"].items())
        ],
    )
    out += [
        "",
        "### Settings (resolved)",
        "",
        "The run's config:",
        "",
        "```json",
        json.dumps(led["run"]["config"], indent=1, sort_keys=True),
        "```",
        "",
    ]
    return out + _trainer_settings_section(led)


def _trainer_settings_section(led: dict) -> list[str]:
    """Each trainer's settings as used (its newest checkpoint in the run): Dojoflow's, every
    default filled in, and the trainer library's whole config (TRL, transformers)."""
    out = []
    for trainer, got in trainer_settings(led["checkpoints"]).items():
        if got is None:
            out += [f"`{trainer}`: settings as used not recorded (a checkpoint from before the catalog kept them).", ""]
            continue
        lib = f", and `{got['library_file']}` (the trainer library's config as used)" if got.get("library") else ""
        out += [f"`{trainer}`: Dojoflow's settings with their defaults{lib}:", "", "```json"]
        out += [json.dumps({k: got[k] for k in ("dojoflow", "library") if got.get(k)}, indent=1, sort_keys=True)]
        out += ["```", ""]
    return out


def card_markdown(store, run_id: str) -> str:
    with catalog.reading(store):  # every query of the card back to back: one connection
        return _card_markdown(store, run_id)


def _card_markdown(store, run_id: str) -> str:
    led = run_ledger(store, run_id)
    rows = read_meaning(metrics.of_run(store, run_id))
    name = led["run"]["config"].get("name", led["run"]["flow"])
    parts = [f"# Results card: `{name}`, run `{run_id}`", ""]
    parts += _headline(rows)
    from .proving.sorry import SORRY

    untried = [u for u in read_results(store, run_id, status="untried") if u["split_kind"] != SORRY]
    from .leaderboard import card_section

    parts += card_section(store, run_id)  # benchmark results as the field reports them
    parts += proving_section(rows, untried)  # a prove run's untried `sorry` theorems are in sorry_section
    parts += sorry_section(store, run_id)
    parts += contamination_section(store, [s["snapshot_id"] for s in led["snapshots"]])
    parts += _provenance(led)
    body = "\n".join(parts)
    cite = (
        f"Dojoflow {(led['provenance'] or {}).get('dojoflow_version', '?')}, run `{run_id}`, "
        f"card `{stable_hash(body, 16)}` (`dojoflow card {run_id}` regenerates it from the catalog)"
    )
    return body + f"\n## How to cite\n\n{cite}\n"


def write_card(store, home: Path, run_id: str) -> dict:
    """Write the card beside the run's report; {path, markdown}."""
    from storage.paths import check_folder_path

    markdown = card_markdown(store, run_id)
    path = Path(home) / "reports" / run_id / CARD_FILE
    check_folder_path(path.parent, fix=f"move that file away: the card goes to {path}")  # reports/ a file: one line
    atomic.write_text(path, markdown)
    return {"path": str(path), "markdown": markdown}


def card_settings(led: dict) -> dict[str, str]:
    """Every setting a card reports, flattened to `a.b.c: value` (what `card_diff` compares)."""
    prov = led["provenance"] or {}
    flat: dict[str, str] = {}

    def walk(prefix: str, value) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                walk(f"{prefix}.{k}" if prefix else str(k), v)
        else:
            flat[prefix] = json.dumps(value, sort_keys=True)

    walk("config", {k: v for k, v in led["run"]["config"].items() if k not in ("home", "name")})
    walk("trainer", trainer_settings(led["checkpoints"]))  # as used: injected and library defaults too
    walk("code", {k: prov.get(k) for k in ("dojoflow_version", "git_commit", "git_dirty", "verifier_rule_version")})
    walk("environment", {k: v for k, v in (prov.get("environment") or {}).items() if k != "host"})
    for s in led["snapshots"]:
        for r in s["repositories"]:
            walk(f"data.{r.get('name', r['repo_id'])}", {k: r.get(k) for k in ("url", "commit", "lean_version")})
    walk("data.snapshots", [s["snapshot_id"] for s in led["snapshots"]])
    # the benchmarks kept out of training (and evaluated on), by fingerprint: a changed file under the same path differs
    walk(
        "data.benchmarks", sorted({fp for s in led["snapshots"] for fp in (s["settings"] or {}).get("benchmarks", [])})
    )
    return flat


def card_diff(store, run_a: str, run_b: str) -> list[str]:
    """`setting: A -> B` for every setting the two runs' cards differ in (both must exist)."""
    a, b = card_settings(run_ledger(store, run_a)), card_settings(run_ledger(store, run_b))
    return [
        f"{k}: {a.get(k, '(not set)')} -> {b.get(k, '(not set)')}"
        for k in sorted(set(a) | set(b))
        if a.get(k) != b.get(k)
    ]
