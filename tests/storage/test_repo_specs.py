"""One rule for naming repositories (storage/repo_specs.py), used by `dojoflow export --repo`
and `dojoflow prove --repo` alike: a table of one case per line."""

import pytest

from storage.errors import InputError
from storage.leandojo import import_export
from storage.repo_specs import resolve_repositories, split_spec
from storage.synthetic import synthetic_commit, write_synthetic_export

URL = "https://dojoflow.invalid/synthetic/"


@pytest.mark.parametrize(
    "spec, expected",
    [
        ("https://github.com/o/r", ("https://github.com/o/r", None)),
        ("https://github.com/o/r@abc12", ("https://github.com/o/r", "abc12")),
        ("git@github.com:o/r", ("git@github.com:o/r", None)),  # a user name, not a commit
        ("git@github.com:o/r@abc12", ("git@github.com:o/r", "abc12")),
        ("/local/repo@main", ("/local/repo", "main")),
        ("NatBasics", ("NatBasics", None)),
        ("repo@", ("repo", None)),
    ],
)
def test_split_spec(spec, expected):
    assert split_spec(spec) == expected


@pytest.fixture
def two_repos(store, tmp_path):
    """`alpha` at two commits (seeds 1 and 2) and `beta` at one."""
    for name, seed in (("alpha", 1), ("alpha", 2), ("beta", 1)):
        import_export(store, write_synthetic_export(tmp_path / f"{name}{seed}", name, 5, 2, seed=seed))
    return store


def _ids(store, name: str) -> list[str]:
    return sorted(r["repo_id"] for r in store.repositories() if r["name"] == name)


def test_every_form_of_spec_names_one_repository(two_repos):
    store = two_repos
    (beta,) = _ids(store, "beta")
    alpha_2 = next(r["repo_id"] for r in store.find_repositories(URL + "alpha", synthetic_commit("alpha", 2)))
    cases = [  # spec -> repo ids
        ([], sorted(store.repo_ids())),
        ([beta], [beta]),  # repo id
        (["beta"], [beta]),  # name
        ([URL + "beta"], [beta]),  # URL
        ([URL + "alpha@" + synthetic_commit("alpha", 2)[:8]], [alpha_2]),  # URL@COMMIT prefix
        (["beta", beta], [beta, beta]),  # in the order given
    ]
    for specs, expected in cases:
        got = resolve_repositories(store, specs)
        assert (sorted(got) if not specs else got) == expected, specs


@pytest.mark.parametrize(
    "spec, problem",
    [
        ("nope", "matches no repository in the store"),
        ("alpha", "matches 2 repositories"),  # a name at two commits
        (URL + "alpha", "matches 2 repositories"),  # a URL at two commits
        (URL + "alpha@ffffffffff", "matches no repository in the store"),
    ],
)
def test_a_spec_that_names_none_or_several_is_an_input_error(two_repos, spec, problem):
    with pytest.raises(InputError, match=problem):
        resolve_repositories(two_repos, [spec])
