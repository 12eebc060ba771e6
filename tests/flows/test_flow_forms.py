"""Every flow's parameters render as a form in the Prefect UI: Prefect builds the form from the
flow's parameter schema (`parameter_schema`), and a parameter typed `dict` or left untyped is a
free JSON box there, not a form. The curriculum's config is the model: a pydantic model whose
fields have types and descriptions. The GRPO flows once took their settings as a `dict`."""

import pytest
from prefect.utilities.callables import parameter_schema


def _flows():
    from flows.curriculum import curriculum
    from flows.grpo import grpo_evaluate, grpo_train
    from flows.nightly import nightly
    from flows.prove import evaluate_proving, prove

    return {f.name: f for f in (curriculum, prove, evaluate_proving, nightly, grpo_train, grpo_evaluate)}


def _resolve(prop: dict, definitions: dict) -> dict:
    for key in ("allOf", "anyOf"):
        if key in prop:
            typed = [p for p in prop[key] if p.get("type") != "null"]
            if len(typed) == 1:
                return _resolve(typed[0], definitions)
    ref = prop.get("$ref")
    return definitions[ref.rsplit("/", 1)[-1]] if ref else prop


def _is_free_json(prop: dict) -> bool:
    """A box for any JSON: no type at all (Any), or an object with no properties of its own."""
    if not any(k in prop for k in ("type", "enum", "const", "anyOf", "allOf", "oneOf")):
        return True
    return prop.get("type") == "object" and "properties" not in prop


@pytest.mark.parametrize("name", ["curriculum", "prove", "evaluate-proving", "nightly", "grpo-train", "grpo-evaluate"])
def test_every_flow_parameter_is_a_typed_field_of_the_form(name):
    schema = parameter_schema(_flows()[name].fn).model_dump()
    definitions = schema.get("definitions", {})
    for param, prop in schema["properties"].items():
        resolved = _resolve(prop, definitions)
        assert not _is_free_json(resolved), f"{name}: parameter {param} is free JSON in the UI: {prop}"


def test_the_grpo_flows_settings_are_the_form_the_curriculum_shows_for_its_grpo_trainer():
    flows = _flows()
    curriculum = parameter_schema(flows["curriculum"].fn).model_dump()["definitions"]["GRPOSettings"]
    for name in ("grpo-train", "grpo-evaluate"):
        schema = parameter_schema(flows[name].fn).model_dump()
        settings = _resolve(schema["properties"]["settings"], schema["definitions"])
        assert settings == curriculum, name
        assert all(field.get("description") for field in settings["properties"].values()), name
        assert all(prop.get("description") for prop in schema["properties"].values()), f"{name}: undocumented"
