"""Identities and content hashes (docs/architecture.md, "Identities and keys").

Ids are built from content, never from paths or timestamps, so a cache key
built from them is valid on any machine.
"""

from __future__ import annotations

import hashlib
import json
import re
from json.encoder import encode_basestring

from .repo_urls import repo_name

_SLUG_RE = re.compile(r"[^A-Za-z0-9._-]+")
COMMIT_RE = re.compile(r"^[0-9a-f]{40}$")


def stable_hash(obj, length: int = 16) -> str:
    """sha256 of a canonical JSON rendering of `obj`, as hex, truncated."""
    data = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8")).hexdigest()[:length]


def proof_id(proof: str) -> str:
    """One id per proof text, whitespace collapsed (whole proofs, statement-set proofs)."""
    return stable_hash(" ".join(proof.split()), 16)


def repo_id(url: str, commit: str) -> str:
    """A readable, filesystem-safe slug plus a short hash of (url, commit).

    For example `mathlib4-29dcec0-1f0c2a9e` for mathlib4 at 29dcec07....
    """
    slug = _SLUG_RE.sub("-", repo_name(url)).strip("-.")[:40] or "repo"
    return f"{slug}-{commit[:7]}-{stable_hash([url, commit], 8)}"


def theorem_id(repo_id_: str, file_path: str, full_name: str) -> str:
    return stable_hash([repo_id_, file_path, full_name], 16)


def theorem_ids(repo_id_: str, file_paths: list[str], full_names: list[str]) -> list[str]:
    """`theorem_id` of many theorems of one repository, the same ids several times faster:
    `stable_hash` of a list of strings is the hash of `["a","b","c"]`, each string as
    `json.dumps` writes it (`encode_basestring`), so that text is built directly."""
    prefix = "[" + encode_basestring(repo_id_) + ","
    sha256 = hashlib.sha256
    return [
        sha256(f"{prefix}{encode_basestring(p)},{encode_basestring(n)}]".encode()).hexdigest()[:16]
        for p, n in zip(file_paths, full_names)
    ]


def unit_interval(*parts: str) -> float:
    """A number in [0, 1) that depends only on `parts`: the basis of random splits."""
    h = hashlib.sha256("\x1f".join(parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big") / 2**64
