"""The one YAML loader for Dojoflow's config files (`dojoflow run CONFIG.yaml`, the nightly config).

PyYAML follows YAML 1.1, where `1e-4` (no dot) is a string; config files are written by
people who mean a number, so such scalars load as floats here (as in YAML 1.2): the rule is
`yaml_float`, which settings that arrive as text by other ways (a Prefect parameter typed in
the UI) use too. A file that is missing, not YAML, or not a mapping is an `InputError` naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from storage.errors import InputError
from storage.repo_urls import is_remote

FLOAT_TEXT = re.compile(r"[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+")
"""Scientific notation that YAML 1.2 reads as a float and YAML 1.1 (PyYAML) may leave a string."""


def yaml_float(value):
    """`value` as a float when it is text in scientific notation (`FLOAT_TEXT`, surrounding
    whitespace aside), read as YAML reads floats (`_` separators dropped); else unchanged.

    >>> yaml_float("1e-4"), yaml_float("5.0E3"), yaml_float(" .5e1 "), yaml_float("1_000e-3")
    (0.0001, 5000.0, 5.0, 1.0)
    >>> yaml_float("1e"), yaml_float("e5"), yaml_float("0x1p3"), yaml_float(7)
    ('1e', 'e5', '0x1p3', 7)
    """
    if isinstance(value, str) and FLOAT_TEXT.fullmatch(value.strip()):
        return float(value.strip().replace("_", ""))
    return value


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", re.compile(rf"^{FLOAT_TEXT.pattern}$"), list("-+0123456789."))


def yaml_error(path: Path, error: yaml.YAMLError) -> InputError:
    """One line naming the file and the line of a syntax error. PyYAML's own text names
    `<unicode string>` (it was given the text, not the file) and spans several lines."""
    mark = getattr(error, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else None
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    context = getattr(error, "context", None)
    return InputError(
        path, f"is not valid YAML ({problem}{f', {context}' if context else ''})", "fix the YAML syntax", where=where
    )


def load_yaml_mapping(path: str | Path, example: str) -> dict:
    """The mapping in the YAML file `path`; `example` names a valid file for the error's fix."""
    path = Path(path)
    if not path.exists():
        raise InputError(path, "does not exist", f"give the path of a YAML config (see {example})")
    if not path.is_file():
        raise InputError(path, "is not a regular file", f"give the path of a YAML config (see {example})")
    try:
        raw = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader) or {}
    except UnicodeDecodeError as e:
        raise InputError(
            path, f"is not UTF-8 text (byte 0x{e.object[e.start]:02x} at offset {e.start})", "save it as UTF-8"
        ) from None
    except yaml.YAMLError as e:
        raise yaml_error(path, e) from None
    if not isinstance(raw, dict):
        raise InputError(path, "must be a mapping of settings", f"see {example}")
    return raw


def resolve_local(value, base: Path, must_exist: bool = False):
    """`value` made absolute against `base` when it is a non-empty relative local path
    (and, with `must_exist`, names a folder there); anything else unchanged."""
    if not isinstance(value, str) or not value or is_remote(value) or Path(value).expanduser().is_absolute():
        return value
    resolved = (base / value).resolve()
    if must_exist and not resolved.is_dir():
        return value
    return str(resolved)
