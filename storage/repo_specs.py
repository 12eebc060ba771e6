"""Naming repositories on the command line and in configs: one rule for every command
(`dojoflow export --repo`, `dojoflow prove --repo`, a prove config's `repos`).

A spec is a repo id, a repository name, a URL, or `URL@COMMIT` (a prefix of the commit is
enough). Each spec must name exactly one stored repository; none, or several (two commits
of one URL), is an InputError saying how to choose.
"""

from __future__ import annotations

from storage.errors import InputError


def split_spec(spec: str) -> tuple[str, str | None]:
    """(url, commit prefix or None) of `URL@COMMIT` or `URL`; an `@` before the last `/` is a
    user name (`git@host:org/repo`), not a commit.

    >>> split_spec("https://github.com/o/r@abc12")
    ('https://github.com/o/r', 'abc12')
    >>> split_spec("git@github.com:o/r")
    ('git@github.com:o/r', None)
    """
    if "@" not in spec.split("/")[-1]:
        return spec, None
    url, _, commit = spec.rpartition("@")
    return (url or spec), (commit or None)


def resolve_repositories(store, specs: list[str]) -> list[str]:
    """Repo ids for `specs`, in their order; no specs: every repository in the store."""
    if not specs:
        return store.repo_ids()
    rows = store.repositories()
    out = []
    for spec in specs:
        found = [r["repo_id"] for r in rows if spec in (r["repo_id"], r["name"])]
        found = found or [r["repo_id"] for r in store.find_repositories(*split_spec(spec))]
        if not found:
            raise InputError(spec, "matches no repository in the store", "run `dojoflow repos` to see what is there")
        if len(found) > 1:
            raise InputError(spec, f"matches {len(found)} repositories", "give a repo id, or add @COMMIT to choose one")
        out += found
    return out
