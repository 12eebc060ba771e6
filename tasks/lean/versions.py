"""Which Lean versions each backend and tracing can work with, and the check that refuses a
repository outside them before any work (docs/lean-backends.md holds the same table, generated
from `supported()` here: `python -m tasks.lean.versions` prints it). Each backend's range is in
its declaration (tasks/lean/registry.py, `versions`); tracing's is `TRACING` here.

A repository's version is what its `lean-toolchain` names (`leanprover/lean4:v4.9.0`).
A run whose repository falls outside the range of the chosen backend, or of tracing, stops
at preflight with one line: the repository, its version, the supported range, what to do.

    python -m tasks.lean.versions
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage.errors import InputError


@dataclass(frozen=True)
class Support:
    """The Lean versions one tool supports: `lowest` and `highest` inclusive; a bound without a
    patch number ("v4.11") covers every release and release candidate of that minor version;
    None: no bound Dojoflow knows of."""

    name: str  # "repl", "leandojo", "kimina", "tracing"
    tool: str  # the pinned package that sets the limit
    lowest: str | None
    highest: str | None
    reason: str  # why the limits are where they are, with the source
    instead: str  # what to do outside the range


TRACING = Support(
    "tracing",
    "lean-dojo 4.20.0 (trace, ExtractData.lean)",
    "v4.9.0",
    "v4.27",
    "lean-dojo 4.20.0's ExtractData.lean fails to compile on v4.8.0 (`Lean.HashMap.get?`, LeanAgent#7; it "
    "reads `const2ModIdx` as a `Std.HashMap`, lean4#4917) and from v4.28 (`ToJson String.Pos`, "
    "LeanDojo-v2#6); the failure would come only after hours of `lake build`",
    "trace a commit whose lean-toolchain is in the range, or import a LeanDojo export made elsewhere "
    "(`dojoflow import`)",
)


def supported() -> dict[str, Support]:
    """{name: Support} of every registered backend that declares its versions, and of tracing."""
    from .registry import backends

    return {**{n: d.versions for n, d in backends().items() if d.versions is not None}, "tracing": TRACING}


def __getattr__(name: str):
    if name == "SUPPORTED":  # the table as it is now (a backend may be registered later)
        return supported()
    raise AttributeError(name)


_VERSION = re.compile(r"v?(\d+)\.(\d+)(?:\.(\d+))?(?:-rc(\d+))?$")


def lean_version(toolchain: str) -> str | None:
    """The version a `lean-toolchain` names ("leanprover/lean4:v4.9.0" -> "v4.9.0"); None when it
    names no numbered release (a nightly, a custom toolchain)."""
    text = toolchain.strip().rsplit(":", 1)[-1]
    return text if _VERSION.match(text) else None


def _key(version: str, upper: bool = False) -> tuple:
    m = _VERSION.match(version)
    if m is None:
        raise ValueError(f"not a Lean version: {version!r}")
    major, minor, patch, rc = m.groups()
    if patch is None:  # "v4.11": every v4.11.x
        return (int(major), int(minor), float("inf") if upper else -1, 0, 0)
    # a release candidate sorts before its release
    return (int(major), int(minor), int(patch), 0 if rc else 1, int(rc or 0))


def range_text(support: Support) -> str:
    if support.lowest is None and support.highest is None:
        return "the version its workspace is built for"
    high = f"{support.highest}.x" if support.highest and support.highest.count(".") == 1 else support.highest
    return f"{support.lowest or 'any'} to {high or 'any'}"


def is_supported(name: str, version: str) -> bool:
    s = supported()[name]
    key = _key(version)
    return (s.lowest is None or key >= _key(s.lowest)) and (s.highest is None or key <= _key(s.highest, upper=True))


def check_version(name: str, repository: str, toolchain: str) -> None:
    """InputError (one line: the repository, its version, the range, what to do) when the Lean
    version `toolchain` names is outside what `name` (a backend kind or "tracing") supports."""
    s = supported()[name]
    if s.lowest is None and s.highest is None:
        return
    version = lean_version(toolchain)
    what = "tracing" if name == "tracing" else f"the {name} backend"
    if version is None:
        raise InputError(
            repository,
            f"its lean-toolchain {toolchain.strip()!r} names no Lean release, so {what} ({s.tool}, Lean "
            f"{range_text(s)}) cannot be known to work",
            f"pin a release in lean-toolchain, or {s.instead}",
        )
    if not is_supported(name, version):
        raise InputError(
            repository,
            f"uses Lean {version}; {what} ({s.tool}) supports Lean {range_text(s)}: {s.reason}",
            s.instead[:1].upper() + s.instead[1:],
        )


def table_markdown() -> str:
    """The table of docs/lean-backends.md."""
    rows = ["| used for | pinned tool | Lean versions | why | outside the range |", "|---|---|---|---|---|"]
    for s in supported().values():
        rows.append(f"| `{s.name}` | {s.tool} | {range_text(s)} | {s.reason} | {s.instead} |")
    return "\n".join(rows)


if __name__ == "__main__":
    print(table_markdown())
