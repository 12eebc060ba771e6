"""Snapshot tactic rows -> chat examples for the SFT tactic generator.

Each traced tactic (a row of schema `storage.schemas.SNAPSHOT_TACTICS`) becomes one
example in TRL's conversational prompt-completion format:

    prompt     = [{"role": "system", "content": <system prompt>},
                  {"role": "user", "content": <state_before>}]
    completion = [{"role": "assistant", "content": <first line of the tactic>}]

so with `completion_only_loss` the loss falls on the tactic (and its end-of-turn
token) only. Tactics that contain `sorry` or `admit` teach nothing and are skipped, as
are tactics whose first line is empty. The `datasets.Dataset` is built in memory from
Python lists: no cache files are written anywhere.

    python -m tasks.sft.data   # prints the examples of a two-row table
"""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa

from storage.tactic_text import NO_GOALS, is_sorry  # the one definition (storage/lean_text.py)

TRUNCATION_MARK = "…\n"


def first_line(tactic: str) -> str:
    """The first non-empty line of a tactic, stripped: what the model learns and is scored on."""
    for line in tactic.strip().splitlines():
        if line.strip():
            return line.strip()
    return ""


def normalize_tactic(tactic: str) -> str:
    """The form two tactics are compared in: first line, runs of whitespace collapsed."""
    return " ".join(first_line(tactic).split())


def prompt_messages(system_prompt: str, state: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": state}]


def fit_state(state: str, tokenizer, max_tokens: int | None) -> str:
    """Cut the beginning of `state` so that it is at most `max_tokens` tokens long.

    A Lean state lists hypotheses first and the goal (`⊢ ...`) last, so the end is
    what matters most. The cut is marked with `…`.
    """
    if max_tokens is None or tokenizer is None or len(state) <= max_tokens:
        # A token covers at least one character, so a short state always fits.
        return state
    enc = tokenizer(state, add_special_tokens=False, return_offsets_mapping=True, verbose=False)
    offsets = enc["offset_mapping"]
    if len(offsets) <= max_tokens:
        return state
    mark_len = len(tokenizer(TRUNCATION_MARK, add_special_tokens=False).input_ids)
    budget = max(1, max_tokens - mark_len)
    while True:
        cut = TRUNCATION_MARK + state[offsets[len(offsets) - budget][0] :]
        # Tokens can merge differently at the new start; shrink until it fits.
        if budget == 1 or len(tokenizer(cut, add_special_tokens=False).input_ids) <= max_tokens:
            return cut
        budget -= 1


def read_tactics(snapshot, split_kind: str, split: str, repo_ids=None) -> pa.Table:
    """`snapshot.tactics(...)`, with an error that lists the split kinds and splits it has."""
    from storage.errors import InputError

    parts = snapshot.manifest().get("parts", {})
    if split_kind not in parts or split not in parts[split_kind]:
        have = ", ".join(f"{k}/{s}" for k in parts for s in parts[k]) or "none"
        raise InputError(
            snapshot.manifest_path,
            f"snapshot {snapshot.snapshot_id} has no {split_kind}/{split} split (it has: {have})",
            "Use one of its split kinds (random, novel_premises) and splits (train, val, test).",
        )
    return snapshot.tactics(split_kind, split, repo_ids=repo_ids)


@dataclass(frozen=True)
class SFTExamples:
    """Chat examples and the snapshot rows they came from (aligned lists)."""

    prompts: list[list[dict[str, str]]]
    completions: list[list[dict[str, str]]]
    repo_ids: list[str]
    theorem_ids: list[str]
    idxs: list[int]
    states: list[str]  # the (possibly cut) state in the prompt
    tactics: list[str]  # the first line the model is trained on
    skipped_sorry: int
    skipped_empty: int

    def __len__(self) -> int:
        return len(self.prompts)

    def subset(self, indices: list[int]) -> "SFTExamples":
        """The examples at `indices`, in that order (skip counts are not carried over)."""
        cols = ("prompts", "completions", "repo_ids", "theorem_ids", "idxs", "states", "tactics")
        picked = {c: [getattr(self, c)[i] for i in indices] for c in cols}
        return SFTExamples(**picked, skipped_sorry=0, skipped_empty=0)

    def to_dataset(self, with_meta: bool = False):
        """A `datasets.Dataset` with `prompt` and `completion` columns (plus row ids if asked)."""
        import datasets

        cols = {"prompt": self.prompts, "completion": self.completions}
        if with_meta:
            cols.update(repo_id=self.repo_ids, theorem_id=self.theorem_ids, idx=self.idxs)
        return datasets.Dataset.from_dict(cols)


def build_examples(
    table: pa.Table,
    system_prompt: str,
    *,
    tokenizer=None,
    max_state_tokens: int | None = None,
) -> SFTExamples:
    """Convert tactic rows (schema SNAPSHOT_TACTICS) into chat examples, in row order."""
    cols = table.select(["repo_id", "theorem_id", "idx", "state_before", "tactic"]).to_pydict()
    prompts, completions, repos, thms, idxs, states, tactics = [], [], [], [], [], [], []
    skipped_sorry = skipped_empty = 0
    for repo, thm, idx, state, tactic in zip(
        cols["repo_id"], cols["theorem_id"], cols["idx"], cols["state_before"], cols["tactic"]
    ):
        if is_sorry(tactic):
            skipped_sorry += 1
            continue
        line = first_line(tactic)
        if not line:
            skipped_empty += 1
            continue
        state = fit_state(state, tokenizer, max_state_tokens)
        prompts.append(prompt_messages(system_prompt, state))
        completions.append([{"role": "assistant", "content": line}])
        repos.append(repo)
        thms.append(thm)
        idxs.append(idx)
        states.append(state)
        tactics.append(line)
    return SFTExamples(prompts, completions, repos, thms, idxs, states, tactics, skipped_sorry, skipped_empty)


def to_sft_dataset(
    table: pa.Table,
    system_prompt: str,
    *,
    tokenizer=None,
    max_state_tokens: int | None = None,
):
    """Tactic rows -> `datasets.Dataset` of TRL conversational prompt-completion examples."""
    return build_examples(table, system_prompt, tokenizer=tokenizer, max_state_tokens=max_state_tokens).to_dataset()


if __name__ == "__main__":
    from storage.schemas import SNAPSHOT_TACTICS

    rows = [
        {"state_before": "n : ℕ\n⊢ n + 0 = n", "tactic": "simp\n  done"},
        {"state_before": "⊢ False", "tactic": "sorry"},
    ]
    full = [
        {
            "repo_id": "demo",
            "theorem_id": f"t{i}",
            "file_path": "Demo.lean",
            "full_name": f"demo{i}",
            "idx": 0,
            "num_tactics": 1,
            "state_after": NO_GOALS,
            "annotated_tactic": r["tactic"],
            "annotations": [],
            **r,
        }
        for i, r in enumerate(rows)
    ]
    ds = to_sft_dataset(pa.Table.from_pylist(full, schema=SNAPSHOT_TACTICS), "You are a Lean 4 tactic generator.")
    for ex in ds:
        print(ex)
