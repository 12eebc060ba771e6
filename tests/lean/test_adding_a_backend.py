"""docs/adding-a-backend.md, run word for word: its module and its registry line make a fifth
backend that the config, preflight, `open_backend`, the verdict rule, the ledger and the
figures' notes all know, with no other file touched."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from storage.errors import InputError
from tasks.lean import open_backend, preflight, registry
from tasks.lean.backend import TheoremSpec
from tasks.lean.config import BackendSettings
from tasks.lean.registry import BackendDef
from tasks.lean.verdict import judge

DOC = Path(__file__).resolve().parents[2] / "docs" / "adding-a-backend.md"
THEOREM = TheoremSpec("r", "https://example.org/r", "0" * 40, "R/A.lean", "R.add_zero", "theorem add_zero : 0 + 0 = 0")


@pytest.fixture
def known(tmp_path, monkeypatch):
    """The doc's module, as package `known_doc`, registered by the doc's registry line."""
    text = DOC.read_text()
    module = re.search(r"`tasks/lean/known.py`.*?```python\n(.*?)```", text, re.S).group(1)
    line = re.search(r"## 2\. The registry line.*?```python\n(.*?)```", text, re.S).group(1)
    package = tmp_path / "known_doc"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "known.py").write_text(module)
    monkeypatch.syspath_prepend(str(tmp_path))
    (declared,) = eval(textwrap.dedent(line).replace("tasks.lean.known", "known_doc.known"), {"BackendDef": BackendDef})
    registry.register(declared)
    try:
        yield declared
    finally:
        registry.unregister("known")


def test_the_docs_backend_is_one_module_and_one_registry_line(known, tmp_path):
    proofs = tmp_path / "proofs.json"
    proofs.write_text(json.dumps({"R.add_zero": "rfl"}))
    settings = BackendSettings.model_validate({"kind": "known", "known": {"path": str(proofs)}})
    assert settings.options == {"known": {"path": str(proofs)}}  # registered after the model: its section lands here
    assert known.options(settings).path == str(proofs)

    preflight(settings, [THEOREM])  # no checkouts, no Lean versions to check
    backend = open_backend(settings, None)
    try:
        assert backend.start(THEOREM).status == "error"  # tactic_mode=False
        good, bad = backend.check_proof(THEOREM, "rfl"), backend.check_proof(THEOREM, "simp")
    finally:
        backend.close()
    verdict = judge(good, "rfl")
    assert verdict.status == "proved" and "runs no Lean" in verdict.reason and verdict.level != "kernel_replayed"
    assert judge(bad, "simp").status == "rejected"


def test_what_callers_ask_comes_from_the_declaration(known, tmp_path):
    from tasks.lean.versions import supported
    from tasks.ledger import backend_version
    from tasks.proving.summary import comparable_to

    settings = BackendSettings(kind="known")
    assert registry.is_lower_bound("known") and not registry.of(settings).needs_statement
    assert (
        registry.of(settings).checkout_option(settings) is None and registry.of(settings).fixed_header(settings) == ""
    )
    assert comparable_to("known").startswith("known: the listed proofs only")
    assert backend_version("known", {"dojoflow_version": "9"}) == "known: Dojoflow 9 (no Lean runs)"
    assert "known" not in supported()  # it declares no Lean versions


def test_as_a_builtin_its_options_are_a_section_of_the_config(known, tmp_path):
    """In BUILTIN, the declaration is registered before the config model is built from the registry."""
    from tasks.lean.config import _backend_settings_model

    model = _backend_settings_model()
    assert model.model_fields["known"].description == "Options of the `known` backend."
    settings = model.model_validate({"kind": "known", "known": {"path": "p.json"}})
    assert settings.known.path == "p.json" and known.options(settings) is settings.known and settings.options == {}
    with pytest.raises(ValueError, match="known.paths"):
        model.model_validate({"kind": "known", "known": {"paths": "p.json"}})


def test_the_docs_backend_refuses_a_missing_file_before_any_work(known, tmp_path):
    settings = BackendSettings.model_validate({"kind": "known", "known": {"path": str(tmp_path / "none.json")}})
    with pytest.raises(InputError) as err:
        open_backend(settings, None)
    assert err.value.source == "backend.known.path"


def test_a_backend_not_registered_is_refused_with_the_registered_ones():
    with pytest.raises(ValueError, match="use one of repl, kimina, leandojo, replay"):
        BackendSettings(kind="known")


def test_the_declarations_carry_what_the_callers_switched_on():
    """The facts callers used to derive from the name (issue 26, A.1) are in the declarations."""
    d = registry.backends()
    assert [n for n in d if not d[n].tactic_mode] == ["kimina"]
    assert [n for n in d if d[n].lower_bound] == [n for n in d if not d[n].needs_statement] == ["replay"]
    assert {n: d[n].checkouts for n in d if d[n].checkouts} == {"repl": "projects", "kimina": "projects"}
    assert {n: d[n].package for n in d if d[n].package} == {
        "repl": "lean-interact",
        "kimina": "kimina-client",
        "leandojo": "lean-dojo",
    }
    assert [n for n in d if d[n].needs_recheck] == ["leandojo"] and [n for n in d if d[n].rechecks] == [
        "repl",
        "kimina",
    ]
    assert all(d[n].comparable_to.startswith(f"{n}: ") for n in d)
    assert list(BackendSettings.model_fields)[-3:] == ["repl", "kimina", "leandojo"]  # a section per options model
    assert BackendSettings(kind="leandojo", recheck="kimina").recheck == "kimina"
    with pytest.raises(ValueError, match="'replay' cannot re-check proofs: use one of repl, kimina"):
        BackendSettings(kind="leandojo", recheck="replay")
    with pytest.raises(ValueError, match="only the leandojo backend's proofs need a re-check"):
        BackendSettings(kind="repl", recheck="kimina")


def doc_pointers(source: str) -> list[str]:
    """The `docs/X.md` (and `docs/X.md, "Section"`) pointers in `source` that lead nowhere."""
    root = DOC.parents[1]
    dead = []
    for path, section in re.findall(r'(docs/[\w-]+\.md)(?:, "([^"]+)")?', source):
        text = (root / path).read_text() if (root / path).is_file() else None
        headings = [line for line in (text or "").splitlines() if line.startswith("#")]
        if text is None or (section and not any(section in h for h in headings)):
            dead.append(f"{path}, {section!r}" if section else path)
    return dead


def test_the_registry_and_the_config_point_to_docs_that_exist():
    """BackendDef's docstring pointed to docs/lean-backends.md, "Adding a backend", which did not exist."""
    root = DOC.parents[1]
    for module in ("tasks/lean/registry.py", "tasks/lean/config.py", "tasks/lean/options.py"):
        assert doc_pointers((root / module).read_text()) == [], module
    assert doc_pointers('see (docs/lean-backends.md, "Adding a backend")') == [
        "docs/lean-backends.md, 'Adding a backend'"
    ]
