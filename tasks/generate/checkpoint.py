"""A tactic generator from a local checkpoint: an SFT (or GRPO) checkpoint folder, full or a
LoRA adapter, loaded with tasks/models/loading.py and run with tasks/sft/generate.py.

The prompt is the checkpoint's own: the system prompt and state length recorded in its
manifest (`dojoflow-checkpoint.json`), so search asks in the form the model was trained on.
A folder that is not a causal LM (a retriever or progress checkpoint, a manifest of a
skipped step) is refused with `NotAGeneratorError` before any search.

    gen = CheckpointGenerator.load(".dojoflow/checkpoints/sft/<id>", GeneratorSettings())
    gen.generate([TacticQuery("n : Nat\\n⊢ n + 0 = n")], k=4)   # [[("simp", -0.3), ...]]
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tasks.checkpoints import MANIFEST as CHECKPOINT_MANIFEST

from .base import Candidates, NotAGeneratorError, ProofWriter, TacticQuery
from .config import GeneratorSettings


def is_tactic_generator(checkpoint) -> bool:
    """Whether a curriculum checkpoint (a `CheckpointRef`) holds a model that generates tactics
    (its trainer declares `generates_tactics`, tasks/trainers/base.py)."""
    from tasks.trainers.registry import tactic_generators

    return checkpoint.trainer in tactic_generators() and checkpoint.has_model


# One model per checkpoint per process, shared by the batches a task runner's threads search
# at once; loading (transformers builds on the meta device, process-wide) and generation
# (torch's global RNG) each take the lock, so threads never interleave them.
_MODELS: dict[tuple[str, str], tuple] = {}
_LOCK = threading.RLock()


def _shared_model(path: Path, model_cache_dir, device: str):
    from tasks.models.loading import load_causal_lm

    key = (str(path), device)
    with _LOCK:
        if key not in _MODELS:
            model, tokenizer = load_causal_lm(path, model_cache_dir)
            _MODELS[key] = (model.to(device).eval(), tokenizer)
        return _MODELS[key]


def checkpoint_prompt_settings(path: Path) -> dict:
    """The trainer settings a Dojoflow checkpoint records; refuses a checkpoint of a non-generator."""
    manifest = path / CHECKPOINT_MANIFEST
    if not manifest.is_file():
        return {}
    data = json.loads(manifest.read_text())
    ref = data.get("checkpoint", {})
    trainer = ref.get("trainer")
    from tasks.trainers.registry import tactic_generators

    if trainer not in tactic_generators():
        raise NotAGeneratorError(
            path,
            f"is a `{trainer}` checkpoint, not a tactic generator",
            f"give a checkpoint of one of the trainers {', '.join(tactic_generators())} "
            "(`dojoflow sql \"SELECT path FROM checkpoints WHERE trainer='sft'\"`)",
        )
    if ref.get("has_model") is False:
        raise NotAGeneratorError(
            path,
            f"holds no model (training was skipped: {ref.get('skipped')})",
            "give a checkpoint of a step that trained",
        )
    return data.get("settings") or {}


def proof_writer_of(path: Path, trained: dict) -> ProofWriter | None:
    """How a checkpoint that writes whole proofs from a statement is asked (its trainer's `proof_writer`,
    read from its manifest or its model card, given the settings it trained with), or None for a tactic
    generator."""
    from tasks.models.loading import read_model_info
    from tasks.trainers.base import load_object
    from tasks.trainers.registry import trainers

    manifest = path / CHECKPOINT_MANIFEST
    trainer = json.loads(manifest.read_text()).get("checkpoint", {}).get("trainer") if manifest.is_file() else None
    info = read_model_info(path) or {}
    declared = trainers().get(trainer or info.get("trainer"))
    if declared is None or declared.proof_writer is None:
        return None
    return load_object(declared.proof_writer)(trained or info.get("settings") or {})


def check_causal_lm(path: Path) -> None:
    """Refuse a folder that is not a causal language model (or an adapter of one)."""
    from tasks.models.loading import is_adapter_dir

    if not path.is_dir():
        raise NotAGeneratorError(
            path, "does not exist or is not a folder", "give a checkpoint folder (save_pretrained layout)"
        )
    if is_adapter_dir(path):
        task = json.loads((path / "adapter_config.json").read_text()).get("task_type")
        if task not in (None, "CAUSAL_LM"):
            raise NotAGeneratorError(
                path, f"is a {task} adapter, not a causal LM one", "give a tactic generator's adapter"
            )
        return
    config = path / "config.json"
    if not config.is_file():
        raise NotAGeneratorError(
            path, "holds no config.json: it is not a model folder", "give a tactic generator checkpoint"
        )
    archs = json.loads(config.read_text()).get("architectures") or []
    if not any(a.endswith("ForCausalLM") for a in archs):
        raise NotAGeneratorError(
            path,
            f"is a {', '.join(archs) or 'model of unknown architecture'}, not a causal language model",
            "give a tactic generator (an SFT or GRPO checkpoint)",
        )


@dataclass(frozen=True)
class CheckpointGenerator:
    """A loaded causal LM that proposes tactics. Holds no per-call state."""

    model: Any
    tokenizer: Any
    settings: GeneratorSettings
    system_prompt: str
    max_state_tokens: int | None
    path: str
    seed: list  # one cell: the attempt's seed (`reseed`)
    name: str = "checkpoint"
    tokens: list = field(default_factory=lambda: [0])  # one cell: tokens generated so far (tasks/ledger.py)
    proof_writer: ProofWriter | None = None  # a whole-proof checkpoint's (its trainer's `proof_writer`)

    @classmethod
    def load(
        cls,
        path: str | Path,
        settings: GeneratorSettings,
        model_cache_dir: str | Path | None = None,
        device: str | None = None,
    ) -> "CheckpointGenerator":
        import torch

        from tasks.sft.config import SFTSettings

        path = Path(path).expanduser().resolve()
        if not path.is_dir():
            raise NotAGeneratorError(path, "does not exist or is not a folder", "give a checkpoint folder")
        trained = checkpoint_prompt_settings(path)  # refuses a retriever's or progress model's checkpoint
        check_causal_lm(path)
        sft = SFTSettings.model_validate(
            {k: v for k, v in trained.items() if k in ("system_prompt", "max_state_tokens")}
        )
        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        model, tokenizer = _shared_model(path, model_cache_dir, device)
        writer = proof_writer_of(path, trained)
        return cls(
            model=model,
            tokenizer=tokenizer,
            settings=settings,
            system_prompt=writer.system_prompt if writer else sft.system_prompt,
            max_state_tokens=sft.max_state_tokens,
            path=str(path),
            seed=[0],
            proof_writer=writer,
        )

    def _run(self, states: list[str], k: int, whole: bool, max_new_tokens: int) -> list[Candidates]:
        """Generation in chunks of `batch_size`; a sampled chunk draws from an RNG seeded by
        (attempt seed, its states), so it does not depend on what other threads generate."""
        import torch

        from storage.ids import stable_hash
        from tasks.sft.generate import generate_tactics_batch

        out: list[Candidates] = []
        size = self.settings.batch_size
        for b in range(0, len(states), size):
            chunk = states[b : b + size]
            devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
            with _LOCK, torch.random.fork_rng(devices=devices):
                torch.manual_seed(int(stable_hash([self.seed[0], chunk, k, whole], 12), 16))
                out += generate_tactics_batch(
                    self.model,
                    self.tokenizer,
                    chunk,
                    k,
                    system_prompt=self.system_prompt,
                    max_new_tokens=max_new_tokens,
                    decoding=self.settings.decoding,
                    temperature=self.settings.temperature,
                    max_state_tokens=self.max_state_tokens,
                    whole_text=whole,
                    tokens=self.tokens,
                )
        return out

    def generate(self, queries: Sequence[TacticQuery], k: int) -> list[Candidates]:
        return self._run([q.goals for q in queries], k, False, self.settings.max_new_tokens)

    def generate_proofs(self, queries: Sequence[TacticQuery], n: int) -> list[Candidates]:
        if self.proof_writer is not None:  # a whole-proof checkpoint: its own prompt, from the statement
            return self._proofs_from_statements(queries, n)
        return self._run([q.goals for q in queries], n, True, self.settings.max_proof_tokens)

    def _proofs_from_statements(self, queries: Sequence[TacticQuery], n: int) -> list[Candidates]:
        import torch

        from storage.ids import stable_hash

        w = self.proof_writer
        prompts = [w.prompt(q.theorem) for q in queries]
        out: list[Candidates] = []
        for b in range(0, len(prompts), self.settings.batch_size):
            chunk = prompts[b : b + self.settings.batch_size]
            devices = [torch.cuda.current_device()] if torch.cuda.is_available() else []
            with _LOCK, torch.random.fork_rng(devices=devices):
                torch.manual_seed(int(stable_hash([self.seed[0], chunk, n, "proof"], 12), 16))
                out += w.generate(
                    self.model, self.tokenizer, chunk, n, system_prompt=self.system_prompt,
                    max_new_tokens=self.settings.max_proof_tokens, decoding=self.settings.decoding,
                    temperature=self.settings.temperature, tokens=self.tokens,
                )  # fmt: skip
        return out

    def reseed(self, seed: int) -> None:
        self.seed[0] = seed

    def close(self) -> None:
        pass
