"""Command-line options as a settings model: a value the model refuses is an InputError naming
the option as the user typed it (`--val-fraction 1.5`), not a pydantic dump (docs/cli.md)."""

from __future__ import annotations

from pydantic import BaseModel, ValidationError

from storage.errors import InputError


def from_options(model: type[BaseModel], options: dict[str, tuple[str, object]]) -> BaseModel:
    """`model(**values)` from command-line options ({field: (option, value)})."""
    try:
        return model(**{field: value for field, (_, value) in options.items()})
    except ValidationError as e:
        first = e.errors()[0]
        field = str(first["loc"][0]) if first["loc"] else ""
        problem = first["msg"].removeprefix("Value error, ")
        if field in options:
            option, value = options[field]
            raise InputError(f"{option} {value}", problem, f"change {option}") from e
        raise InputError(", ".join(f"{o} {v}" for o, v in options.values()), problem, "change them") from e
