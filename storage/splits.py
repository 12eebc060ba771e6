"""Splits fixed at ingestion (docs/architecture.md): a theorem's split never moves later.

`random`: from a hash of the theorem's identity (url, file path, full name), so it
does not depend on which other theorems or repositories exist, nor on the commit.
`novel_premises`: LeanDojo's rule within the theorem's own repository: premises
sorted by how many theorems use them (fewest first); theorems using the rarest
premises fill val+test; the rest are train. Ties and the val/test division are
broken by the same identity hash instead of LeanDojo's unseeded shuffle.
"""

from __future__ import annotations

from collections import defaultdict

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .ids import unit_interval


class SplitSettings(BaseModel):
    """How theorems of a newly ingested repository are assigned to splits."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    val_fraction: float = Field(0.1, ge=0.0, lt=1.0, description="Share of theorems in val, per split kind.")
    test_fraction: float = Field(0.1, ge=0.0, lt=1.0, description="Share of theorems in test, per split kind.")
    salt: str = Field("dojoflow-v1", description="Mixed into the hash; change it to draw a different random split.")

    @model_validator(mode="after")
    def _fractions_leave_training_data(self):
        if self.val_fraction + self.test_fraction >= 1.0:
            raise ValueError(
                f"val_fraction ({self.val_fraction}) + test_fraction ({self.test_fraction}) must be "
                "below 1 so that some theorems are left to train on: lower one of them"
            )
        return self


def _u(settings: SplitSettings, url: str, file_path: str, full_name: str) -> float:
    return unit_interval(settings.salt, url, file_path, full_name)


def assign_random(keys: list[tuple[str, str, str]], settings: SplitSettings) -> list[str]:
    """Split of each (url, file_path, full_name), independent of the others."""
    out = []
    for url, file_path, full_name in keys:
        u = _u(settings, url, file_path, full_name)
        if u < settings.val_fraction:
            out.append("val")
        elif u < settings.val_fraction + settings.test_fraction:
            out.append("test")
        else:
            out.append("train")
    return out


def assign_novel_premises(
    keys: list[tuple[str, str, str]], premises_used: list[set[str]], settings: SplitSettings
) -> list[str]:
    """LeanDojo's novel_premises split of one repository's theorems."""
    n = len(keys)
    num_val = round(n * settings.val_fraction)
    num_test = round(n * settings.test_fraction)
    order = {k: _u(settings, *k) for k in keys}
    users: dict[str, list[int]] = defaultdict(list)
    for i, used in enumerate(premises_used):
        for p in used:
            users[p].append(i)
    chosen: list[int] = []
    seen: set[int] = set()
    for _, idxs in sorted(users.items(), key=lambda kv: (len(kv[1]), kv[0])):
        if len(chosen) >= num_val + num_test:
            break
        for i in idxs:
            if i not in seen:
                seen.add(i)
                chosen.append(i)
    chosen.sort(key=lambda i: order[keys[i]])
    val = set(chosen[:num_val])
    test = set(chosen[num_val:])
    return ["val" if i in val else "test" if i in test else "train" for i in range(n)]
