"""`LeanGRPOTrainer`: TRL's GRPOTrainer plus what the GRPO family needs and TRL lacks.

It overrides two of TRL's hooks and nothing else:

- `_generate_and_score_completions`: after TRL generated, rewarded and computed
  advantages, it (1) replaces the advantages when the algorithm asks for one of
  lean-grpo's treatments (`algorithms.advantages_for`), (2) runs DAPO's dynamic
  sampling: groups whose rewards are all equal are dropped and replaced by groups of
  new prompts until the batch is full or `max_resample_rounds` is reached (then the
  rest is padded with dropped groups whose tokens are masked out of the loss), and
  (3) for DGPO adds what its DPO term needs: group ids, which completions Lean
  verified, and reference log-probabilities.
- `_compute_loss`: TRL's loss, plus `dpo_coef · algorithms.dpo_loss` for DGPO.

Per step it logs `dapo/groups_dropped`, `dapo/groups_refilled`, `dapo/groups_padded`,
`dgpo/dpo_loss`, `dgpo/pairs` next to TRL's own metrics. The math is in
`tasks.grpo.algorithms`; see docs/grpo.md.
"""

from __future__ import annotations

import copy
from collections import deque
from typing import Any

import torch
from trl import GRPOTrainer

from .algorithms import (
    ResolvedAlgorithm,
    advantages_for,
    dpo_loss,
    dpo_pairs,
    fill_batch,
    sequence_logps,
    zero_variance_groups,
)

# Row-aligned keys TRL's output holds, and how each is padded when batches are joined.
_LEFT_PADDED = ("prompt_ids", "prompt_mask")
_RIGHT_PADDED = (
    "completion_ids",
    "completion_mask",
    "old_per_token_logps",
    "ref_per_token_logps",
    "sampling_per_token_logps",
    "tool_mask",
)


def _pad_to(t: torch.Tensor, width: int, left: bool, value) -> torch.Tensor:
    extra = width - t.shape[1]
    if extra <= 0:
        return t
    pad = torch.full((t.shape[0], extra), value, dtype=t.dtype, device=t.device)
    return torch.cat([pad, t] if left else [t, pad], dim=1)


def join_batches(batches: list[dict[str, Any]], pad_id: int) -> dict[str, Any]:
    """Concatenate TRL generation outputs row-wise, re-padding prompts (left) and completions (right)."""
    if len(batches) == 1:
        return batches[0]
    out: dict[str, Any] = {}
    for key in batches[0]:
        values = [b.get(key) for b in batches]
        if any(v is None for v in values):
            continue
        if key == "num_items_in_batch":
            continue
        if key in _LEFT_PADDED or key in _RIGHT_PADDED:
            width = max(v.shape[1] for v in values)
            fill = pad_id if key in ("prompt_ids", "completion_ids") else (1 if key == "tool_mask" else 0)
            out[key] = torch.cat([_pad_to(v, width, key in _LEFT_PADDED, fill) for v in values], dim=0)
        elif isinstance(values[0], torch.Tensor) and values[0].ndim >= 1:
            out[key] = torch.cat(values, dim=0)
        else:
            raise ValueError(f"cannot join the generation output {key!r} of several batches")
    out["num_items_in_batch"] = out["completion_mask"].sum()
    return out


def select_rows(batch: dict[str, Any], rows: list[int]) -> dict[str, Any]:
    index = torch.tensor(rows, dtype=torch.long)
    out = {}
    for key, value in batch.items():
        if isinstance(value, torch.Tensor) and value.ndim >= 1:
            out[key] = value[index.to(value.device)]
        else:
            out[key] = value
    return out


class LeanGRPOTrainer(GRPOTrainer):
    """GRPOTrainer with the algorithm's missing pieces (module docstring)."""

    def __init__(self, *args, algorithm: ResolvedAlgorithm, verified_reward: str | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.algorithm = algorithm
        self._history: deque = deque(maxlen=int(algorithm.options.get("population_size", 100)))
        self._rewards_per_func: torch.Tensor | None = None
        self._refill_order: list[int] = []
        self._refill_generator = torch.Generator().manual_seed(self.args.seed)
        self._verified_index = (
            self.reward_func_names.index(verified_reward) if verified_reward in self.reward_func_names else None
        )
        self._dpo_reference = None
        if algorithm.dynamic_sampling and self.accelerator.num_processes > 1:
            from storage.errors import InputError

            raise InputError(
                "GRPOSettings.algorithm_config.dynamic_sampling",
                f"is on but training runs in {self.accelerator.num_processes} processes: each rank would "
                "drop and refill its own groups, and a refill's generation gathers across ranks that are not there",
                "train DAPO's dynamic sampling in one process (launch.processes: 1), or set dynamic_sampling: false",
            )
        if algorithm.dpo_coef > 0:
            if self._verified_index is None:
                raise ValueError(
                    "dgpo needs a Lean reward (lean_tactic or lean_proof) to tell verified completions "
                    "from failed ones; add one to `rewards`."
                )
            from accelerate.utils import is_peft_model

            if self.beta == 0.0 and not is_peft_model(self.accelerator.unwrap_model(self.model)):
                # The DPO term needs π_ref; GRPO keeps none without a KL term, so freeze a copy of the start.
                self._dpo_reference = copy.deepcopy(self.accelerator.unwrap_model(self.model)).eval()
                self._dpo_reference.requires_grad_(False)

    # -- rewards and advantages ------------------------------------------------------
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        self._rewards_per_func = rewards
        return rewards

    def _weighted_rewards(self, rewards_per_func: torch.Tensor) -> torch.Tensor:
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        return (rewards_per_func * weights).nansum(dim=1)

    def _score_batch(self, inputs: list[dict]) -> tuple[dict[str, Any], torch.Tensor, torch.Tensor]:
        """TRL's generation and scoring of `inputs`, with our advantages; (output, rewards, per-func rewards)."""
        output = super()._generate_and_score_completions(inputs)
        # tokens generated, up to each completion's end (TRL's mask): the ledger's compute (tasks/ledger.py)
        self.tokens_generated = getattr(self, "tokens_generated", 0) + int(output["completion_mask"].sum())
        per_func = self._rewards_per_func  # gathered by TRL: the whole global batch's rows
        rewards = self._weighted_rewards(per_func)
        mine = self._own_rows(output["advantages"].shape[0])
        if self.algorithm.custom_advantages:  # over whole groups of the global batch, then this rank's rows
            options = {**self.algorithm.options, "scale_std": self.scale_rewards != "none"}
            whole = advantages_for(rewards.cpu(), self.num_generations, options, list(self._history))
            output["advantages"] = whole[mine].to(output["advantages"].device)
        self._history.extend(rewards.tolist())
        return output, rewards[mine], per_func[mine]

    def _own_rows(self, n: int) -> slice:
        """This rank's rows of the gathered global batch when it holds `n` (TRL's `process_slice`)."""
        start = self.accelerator.process_index * n
        return slice(start, start + n)

    def _new_inputs(self, groups: int) -> list[dict]:
        """`groups` prompts not used in this batch yet, each repeated num_generations times."""
        rows = []
        for _ in range(groups):
            if not self._refill_order:
                self._refill_order = torch.randperm(len(self.train_dataset), generator=self._refill_generator).tolist()
            rows.append(self.train_dataset[self._refill_order.pop()])
        return [row for row in rows for _ in range(self.num_generations)]

    def _generate_and_score_completions(self, inputs):
        mode = "train" if self.model.training else "eval"
        output, rewards, per_func = self._score_batch(inputs)
        g = self.num_generations
        if mode == "train" and self.algorithm.dynamic_sampling:
            output, per_func = self._dynamic_sampling(output, rewards, per_func, len(inputs) // g)
        if self.algorithm.dpo_coef > 0:
            self._add_dpo_inputs(output, per_func)
        return output

    def _dynamic_sampling(self, output, rewards, per_func, wanted: int):
        """DAPO: keep groups with reward variance; refill from new prompts; pad (masked) if that runs out."""
        g = self.num_generations
        batches, funcs, kept, dropped = [output], [per_func], [], []
        offset, rounds, refilled = 0, 0, 0
        flat = zero_variance_groups(rewards, g).tolist()
        n_dropped = sum(flat)
        while True:
            for j, zero in enumerate(flat):
                (dropped if zero else kept).append(offset + j)
            if len(kept) >= wanted or rounds >= self.algorithm.options.get("max_resample_rounds", 4):
                break
            rounds += 1
            missing = wanted - len(kept)
            offset += len(flat)
            extra, extra_rewards, extra_funcs = self._score_batch(self._new_inputs(missing))
            batches.append(extra)
            funcs.append(extra_funcs)
            flat = zero_variance_groups(extra_rewards, g).tolist()
            n_dropped += sum(flat)
            refilled += missing
        chosen, padding = fill_batch(kept, dropped, wanted)
        joined = join_batches(batches, self._tokenizer.pad_token_id)
        rows = [grp * g + i for grp in chosen for i in range(g)]
        out = select_rows(joined, rows)
        if padding:
            pad_rows = torch.zeros(len(rows), dtype=torch.bool)
            for k, grp in enumerate(chosen):
                if grp in padding:
                    pad_rows[k * g : (k + 1) * g] = True
            out["completion_mask"] = out["completion_mask"] * (~pad_rows).unsqueeze(1).to(out["completion_mask"])
            out["advantages"] = out["advantages"].masked_fill(pad_rows.to(out["advantages"].device), 0.0)
        out["num_items_in_batch"] = out["completion_mask"].sum()
        metrics = self._metrics["train"]
        metrics["dapo/groups_dropped"].append(float(n_dropped))
        metrics["dapo/groups_refilled"].append(float(refilled))
        metrics["dapo/groups_padded"].append(float(len(padding)))
        examined = sum(b["completion_ids"].shape[0] for b in batches) // g
        metrics["dapo/frac_groups_dropped"].append(n_dropped / max(1, examined))
        all_funcs = torch.cat(funcs, dim=0)
        return out, all_funcs[torch.tensor(rows, dtype=torch.long, device=all_funcs.device)]

    # -- DGPO ------------------------------------------------------------------------
    def _add_dpo_inputs(self, output: dict[str, Any], per_func: torch.Tensor) -> None:
        g = self.num_generations
        n = output["completion_ids"].shape[0]
        device = output["completion_ids"].device
        threshold = float(self.algorithm.options.get("verified_reward", 1.0))
        lean = per_func[:, self._verified_index]
        # the global batch's group of each row: under torchrun a group may span ranks (a DPO pair
        # then needs both completions on one rank)
        output["dgpo_group"] = (torch.arange(n, device=device) + self._own_rows(n).start) // g
        output["dgpo_verified"] = (torch.nan_to_num(lean, nan=-1.0) >= threshold).to(device)
        if "ref_per_token_logps" not in output:
            output["dgpo_ref_logps"] = self._reference_logps(output)

    @torch.no_grad()
    def _reference_logps(self, output: dict[str, Any]) -> torch.Tensor:
        from trl.trainer.utils import use_adapter

        input_ids = torch.cat([output["prompt_ids"], output["completion_ids"]], dim=1)
        attention = torch.cat([output["prompt_mask"], output["completion_mask"]], dim=1)
        keep = output["completion_ids"].size(1)
        if self._dpo_reference is not None:
            logps, _, _ = self._get_per_token_logps_and_entropies(self._dpo_reference, input_ids, attention, keep)
            return logps
        model = self.accelerator.unwrap_model(self.model)
        with use_adapter(model, adapter_name="ref" if "ref" in model.peft_config else None):
            logps, _, _ = self._get_per_token_logps_and_entropies(self.model, input_ids, attention, keep)
        return logps

    def _compute_loss(self, model, inputs):
        loss = super()._compute_loss(model, inputs)
        coef = self.algorithm.dpo_coef
        if coef <= 0 or "dgpo_group" not in inputs:
            return loss
        pairs = dpo_pairs(inputs["dgpo_group"], inputs["dgpo_verified"])
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["dgpo/pairs"].append(float(len(pairs)))
        if not pairs:
            self._metrics[mode]["dgpo/dpo_loss"].append(0.0)
            return loss
        mask = inputs["completion_mask"]
        input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], dim=1)
        attention = torch.cat([inputs["prompt_mask"], mask], dim=1)
        logps, _, _ = self._get_per_token_logps_and_entropies(model, input_ids, attention, mask.size(1))
        ref = inputs.get("ref_per_token_logps", inputs.get("dgpo_ref_logps"))
        term = dpo_loss(
            sequence_logps(logps, mask),
            sequence_logps(ref, mask),
            pairs,
            float(self.algorithm.options.get("dpo_beta", 0.1)),
        )
        self._metrics[mode]["dgpo/dpo_loss"].append(term.item())
        accumulation = self.current_gradient_accumulation_steps if mode == "train" else 1.0
        return loss + coef * term / accumulation
