"""Checks of one record's fields: each bad value is an InputError naming the file, the
record and the field, with the fix."""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import PurePosixPath

from ..errors import InputError
from ..ids import COMMIT_RE
from ..lean_text import challenge_problem, control_problem, lean_name_problem, statement_problem, tactic_problem
from ..repo_urls import redact_url, same_repository, url_credentials
from .records import ABSENT, MAX_POS, TheoremKey

_RECORD_FIX = "fix the record or re-create the export"


def need(rec: dict, key: str, types, source, where: str, nullable: bool = False):
    """`rec[key]`, refused when `rec` is not an object, the key is missing or the value
    is not of `types` (a JSON boolean is not an integer)."""
    if not isinstance(rec, dict):
        raise InputError(
            source, f"expected a JSON object, found {type(rec).__name__}", "each record must be an object", where=where
        )
    if key not in rec:
        raise InputError(source, f"field `{key}` is missing", "add it or re-create the export", where=where)
    value = rec[key]
    if value is None and nullable:
        return None
    allowed = types if isinstance(types, tuple) else (types,)
    if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
        raise InputError(
            source,
            f"field `{key}` should be {_type_name(allowed)}, found {json.dumps(value)[:80]}",
            _RECORD_FIX,
            where=where,
        )
    return value


def _type_name(types: tuple) -> str:
    names = {str: "a string", list: "a list", dict: "an object", int: "an integer"}
    return " or ".join(names.get(t, t.__name__) for t in types)


def pos(rec: dict, key: str, source, where: str, nullable: bool = False):
    """A [line, column] position of 64-bit integers, 0 or more."""
    value = need(rec, key, list, source, where, nullable=nullable)
    if value is None:
        return None
    if len(value) != 2 or not all(type(v) is int and 0 <= v <= MAX_POS for v in value):
        raise InputError(
            source,
            f"field `{key}` should be [line, column] (two integers, 0 or more), found {json.dumps(value)[:80]}",
            _RECORD_FIX,
            where=where,
        )
    return list(value)


def span(rec: dict, start_key: str, end_key: str, source, where: str, nullable: bool = False, optional: bool = False):
    """(start, end) positions of a record, `end` not before `start` (`optional`: a
    missing key reads as None)."""
    start = pos(rec, start_key, source, where, nullable=nullable) if not optional or start_key in rec else None
    end = pos(rec, end_key, source, where, nullable=nullable) if not optional or end_key in rec else None
    if start is not None and end is not None and end < start:
        raise InputError(
            source,
            f"field `{end_key}` {end} comes before `{start_key}` {start}",
            "fix the positions or re-create the export",
            where=where,
        )
    return start, end


def url(rec: dict, source, where: str) -> str:
    value = need(rec, "url", str, source, where)
    if not value.strip():
        raise InputError(
            source,
            "field `url` is empty",
            "give the repository's url, as LeanDojo writes it (e.g. https://github.com/owner/repo)",
            where=where,
        )
    if control_problem(value):
        raise InputError(source, f"field `url` {control_problem(value)}", _RECORD_FIX, where=where)
    if _GIT_HELPER.match(value):  # `ext::sh -c ...` runs a command when git fetches it
        raise InputError(
            source,
            f"the url {value[:80]!r} is not a repository url (git would run it through a remote helper or "
            "read it as an option)",
            "give the repository's url, as LeanDojo writes it (e.g. https://github.com/owner/repo)",
            where=where,
        )
    if url_credentials(value) is not None:  # it would be stored in the catalog and every export
        raise InputError(
            source,
            f"the url {redact_url(value)} holds credentials",
            "remove the user info before '@' from the export's urls (credentials belong in a git "
            "credential helper, never in a URL)",
            where=where,
        )
    return value


# git's `<transport>::<address>` (a remote helper: `ext::` runs a command) and a leading `-`
# (read as an option by git), neither of which is a repository's url.
_GIT_HELPER = re.compile(r"\s*-|[A-Za-z0-9][A-Za-z0-9+.-]*::")


def valid_repo(url_: str, commit: str) -> bool:
    """True when `url` and `check_commit` would accept this pair."""
    return (
        bool(url_.strip())
        and not _GIT_HELPER.match(url_)
        and control_problem(url_) is None
        and url_credentials(url_) is None
        and COMMIT_RE.match(commit) is not None
    )


@lru_cache(maxsize=1 << 16)
def is_relative_inside(path: str) -> bool:
    """True for a path relative to the repository root that stays inside it and holds no
    control character (cached: every annotation repeats its premise's file)."""
    p = PurePosixPath(path)
    return (
        bool(path)
        and not p.is_absolute()
        and ".." not in p.parts
        and "\\" not in path
        and control_problem(path) is None
    )


def check_relative_path(path: str, source, where: str) -> str:
    if not is_relative_inside(path):
        problem = control_problem(path)
        raise InputError(
            source,
            f"file path {path!r} {problem}" if problem else f"file path {path!r} escapes the repository",
            "paths must be relative to the repository root, without `..` or control characters",
            where=where,
        )
    return path


def check_commit(commit: str, source, where: str | None = None) -> str:
    if not isinstance(commit, str) or not COMMIT_RE.match(commit):
        raise InputError(
            source,
            f"commit {commit!r} is not a commit (expected 40 lowercase hex characters)",
            "give the full git commit hash",
            where=where,
        )
    return commit


@lru_cache(maxsize=1 << 16)
def is_theorem_name(name: str) -> bool:
    return lean_name_problem(name) is None


FULL_NAME_FIX = "a theorem's full_name is one Lean name, e.g. Nat.add_comm: re-create the export"


def check_theorem_name(name: str, source, where: str) -> str:
    """`name`, refused unless it is one Lean name (issue 16 §5: it reaches Lean in commands)."""
    if problem := lean_name_problem(name):  # the name's repr only for a refused one (one call a theorem)
        refuse(problem, source, where, f"field `full_name` {name[:80]!r} ", FULL_NAME_FIX)
    return name


def refuse(problem: str | None, source, where: str, field: str, fix: str) -> None:
    """An InputError at `source`/`where` saying `field` then `problem`, and `fix`; nothing when
    there is no problem."""
    if problem:
        raise InputError(source, f"{field}{problem}", fix, where=where)


def check_statement(statement: str | None, full_name: str, source, where: str) -> str | None:
    """`statement`, refused unless it is one declaration's signature (or null) declaring the
    record's `full_name` (the constant a proof of it declares is the one verdicts are about)."""
    problem = statement_problem(statement, full_name) if statement is not None else None
    problem = problem or (challenge_problem(statement) if statement is not None else None)
    refuse(
        problem,
        source,
        where,
        "field `theorem_statement` ",
        "a statement is the signature of the declaration full_name names (`theorem name args : type`): "
        "re-create the export",
    )
    return statement


def declared_repos(metadata: dict) -> list[tuple[str, str]]:
    """The (url, commit) pairs metadata.json declares: `from_repo`, and the `repositories` a
    Dojoflow export lists."""
    listed = [metadata.get("from_repo")]
    if isinstance(metadata.get("repositories"), list):
        listed += metadata["repositories"]
    return [
        (r["url"], r["commit"])
        for r in listed
        if isinstance(r, dict) and isinstance(r.get("url"), str) and isinstance(r.get("commit"), str)
    ]


_DECLARES = "which metadata.json declares for"


def repo_problem(repo: tuple[str, str], declared: list[tuple[str, str]]) -> str | None:
    """A reason when a record's (url, commit) contradicts metadata.json: a declared repository's
    url at another commit, or a declared commit under another url (each would silently become a
    second repository). Other pairs are dependencies (mathlib, std), and fine."""
    if repo in declared:
        return None
    url_, commit = repo
    for d_url, d_commit in declared:
        if commit == d_commit:
            return f"the record's url {redact_url(url_)[:120]} is not {redact_url(d_url)[:120]}, {_DECLARES} {commit}"
        if same_repository(url_, d_url):
            return f"the record's commit {commit[:80]} is not {d_commit}, {_DECLARES} {redact_url(d_url)[:120]}"
    return None


def check_repo(key: TheoremKey, declared: list[tuple[str, str]], source, where: str) -> None:
    refuse(
        repo_problem(key.repo, declared),
        source,
        where,
        "",
        "a repository is one url at one commit: correct the record, or metadata.json's from_repo",
    )


def check_tactic(tactic: str, source, where: str) -> str:
    """`tactic`, refused when it holds a command (it reaches Lean inside a proof when replayed)."""
    refuse(
        tactic_problem(tactic),
        source,
        where,
        "field `tactic` ",
        "a traced tactic is one tactic of a proof, never a command: re-create the export",
    )
    return tactic


def identity(rec, source, i: int) -> TheoremKey:
    """A theorem record's checked identity (record `i` of `source`)."""
    where = f"record {i}"
    full_name = need(rec, "full_name", str, source, where)
    where = f"record {i} ({full_name[:80]!r})" if control_problem(full_name) else f"record {i} ({full_name})"
    url_ = url(rec, source, where)
    commit = check_commit(need(rec, "commit", str, source, where), source, where)
    file_path = check_relative_path(need(rec, "file_path", str, source, where), source, where)
    check_theorem_name(full_name, source, where)
    return TheoremKey(url_, commit, file_path, full_name)


def extra(rec: dict, known: set[str], optional: tuple[str, ...] = ()) -> str | None:
    """The keys of `rec` that Dojoflow does not model, as JSON (and the optional keys it
    lacked, under ABSENT), so that an export gives back the record it read."""
    kept = {k: v for k, v in rec.items() if k not in known}
    absent = [k for k in optional if k not in rec]
    if absent:
        kept[ABSENT] = absent
    return json.dumps(kept, sort_keys=True, ensure_ascii=False) if kept else None
