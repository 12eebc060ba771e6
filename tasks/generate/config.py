"""`GeneratorSettings`: which tactic generator proof search uses, and how it decodes."""

from __future__ import annotations

from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator


class EndpointSettings(BaseModel):
    """An OpenAI-compatible completions endpoint (vLLM `vllm serve`, TGI, a hosted model)."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        ..., description="Base URL of the server, e.g. http://127.0.0.1:8000 (requests go to <url>/v1/completions)."
    )
    model: str = Field(..., description="The model name the server serves (its /v1/models lists them).")
    api_key_env: Optional[str] = Field(
        "OPENAI_API_KEY",
        description="Environment variable holding the API key, sent as a Bearer token; the key itself never appears in a config or a log. Null: no key.",
    )
    timeout_s: float = Field(60.0, gt=0, description="Seconds to wait for one HTTP request.")
    retries: int = Field(
        3,
        ge=0,
        le=20,
        description="Retries of a request that timed out or got HTTP 429/5xx, with exponential back-off.",
    )
    prompt_template: str = Field(
        "[GOAL]\n{goals}\n[PROOFSTEP]\n",
        description="Prompt for one tactic; `{goals}` is the proof state (ReProver's format by default).",
    )
    load_adapters: bool = Field(
        True,
        description="When the checkpoint that should search is a LoRA adapter (expert iteration's rounds), load "
        "it into the server through vLLM's `/v1/load_lora_adapter` (`vllm serve --enable-lora` with "
        "VLLM_ALLOW_RUNTIME_LORA_UPDATING=True; the adapter folder must be readable by the server) and ask "
        "for it by name; a server that cannot is named in the log, and searches with `model`.",
    )
    proof_prompt_template: str = Field(
        "{statement} := by\n",
        description="Prompt for a whole proof (whole-proof mode); `{statement}` is the theorem up to `:=`, `{goals}` its initial goals.",
    )


class GeneratorSettings(BaseModel):
    """The tactic generator: the step's checkpoint (optionally retrieval-augmented), or an endpoint."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["checkpoint", "retrieval", "endpoint"] = Field(
        "checkpoint",
        description="`checkpoint`: the tactic generator's checkpoint (SFT/GRPO, LoRA included); `retrieval`: the same with the retriever's top premises put into the prompt (ReProver's RetrievalProver); `endpoint`: an OpenAI-compatible server.",
    )
    decoding: Literal["beam", "sample"] = Field(
        "beam",
        description="`beam`: k beams, deterministic (ReProver); `sample`: k samples at `temperature` (needed for more than one attempt per theorem).",
    )
    temperature: float = Field(1.0, gt=0, description="Sampling temperature (`sample` decoding and endpoints).")
    max_new_tokens: int = Field(64, ge=1, le=4096, description="Tokens generated per tactic at most.")
    max_proof_tokens: int = Field(
        512, ge=1, le=16384, description="Tokens generated per whole proof at most (whole-proof mode)."
    )
    batch_size: int = Field(
        8, ge=1, le=1024, description="Proof states generated for in one forward pass (local checkpoints)."
    )
    retriever_checkpoint: Optional[str] = Field(
        None,
        description="`retrieval`: a retriever checkpoint folder (tasks/retriever/), whose top premises go into the prompt.",
    )
    num_premises: int = Field(
        10, ge=1, le=100, description="`retrieval`: premises put into the prompt (ReProver uses up to 100)."
    )
    endpoint: Optional[EndpointSettings] = Field(None, description="`endpoint`: the server to ask.")
    progress_checkpoint: Optional[str] = Field(
        None,
        description="A progress-model checkpoint: candidates are re-ranked by predicted steps remaining (fewest first) before search tries them.",
    )

    @model_validator(mode="after")
    def _kind_needs(self):
        if self.kind == "endpoint" and self.endpoint is None:
            raise ValueError("`kind: endpoint` needs an `endpoint:` section with `url` and `model`")
        if self.kind != "endpoint" and self.endpoint is not None:
            raise ValueError(f"`endpoint:` is only read with `kind: endpoint`, not `kind: {self.kind}`")
        return self
