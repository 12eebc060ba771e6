"""One repository's theorems and tactics as Arrow tables, built column by column
(docs/leandojo-export.md: building them row by row took a third of the import)."""

from __future__ import annotations

from itertools import accumulate

import pyarrow as pa
import pyarrow.compute as pc

from .. import schemas
from ..ids import theorem_ids
from ..tactic_text import sorry_mask
from .records import Theorem, TheoremKey


def theorem_tables(
    rid: str,
    keys: list[TheoremKey],
    export_order: list[int],
    theorems: dict[TheoremKey, Theorem],
    extras: dict,
    splits: tuple[list[str], list[str]],
) -> tuple[pa.Table, pa.Table]:
    """The theorems and tactics tables of repository `rid` (`splits`: the random and
    novel_premises split of each theorem)."""
    records = [theorems[k] for k in keys]
    counts = [len(r.traced_tactics) for r in records]
    tactics = [t for r in records for t in r.traced_tactics]
    parent = pa.array([i for i, c in enumerate(counts) for _ in range(c)], pa.int64())
    paths, names = [k.file_path for k in keys], [k.full_name for k in keys]
    theorem_id = pa.array(theorem_ids(rid, paths, names), pa.string())
    file_path, full_name = pa.array(paths, pa.string()), pa.array(names, pa.string())
    tactic = pa.array([t.tactic for t in tactics], pa.string())
    theorem_extra = tactic_extra = None
    if extras:
        kept = [extras.get(k, (None, [None] * c)) for k, c in zip(keys, counts)]
        theorem_extra, tactic_extra = [e for e, _ in kept], [e for _, es in kept for e in es]
    has_sorry = pc.is_in(pa.array(range(len(keys)), pa.int64()), value_set=pc.filter(parent, sorry_mask(tactic)))
    theorem_table = pa.Table.from_arrays(
        [
            pa.array([rid] * len(keys), pa.string()),
            theorem_id,
            file_path,
            full_name,
            pa.array([r.theorem_statement for r in records], pa.string()),
            pa.array([r.start for r in records], schemas.POS),
            pa.array([r.end for r in records], schemas.POS),
            pa.array(counts, pa.int64()),
            has_sorry,
            pa.array(splits[0], pa.string()),
            pa.array(splits[1], pa.string()),
            pa.array(export_order, pa.int64()),
            pa.array(theorem_extra or [None] * len(keys), pa.string()),
        ],
        schema=schemas.THEOREMS,
    )
    tactic_table = pa.Table.from_arrays(
        [
            pa.array([rid] * len(tactics), pa.string()),
            theorem_id.take(parent),
            file_path.take(parent),
            full_name.take(parent),
            pa.array([j for c in counts for j in range(c)], pa.int64()),
            tactic,
            pa.array([t.annotated_tactic[0] for t in tactics], pa.string()),
            _annotations(tactics),
            pa.array([t.state_before for t in tactics], pa.string()),
            pa.array([t.state_after for t in tactics], pa.string()),
            pa.array(tactic_extra or [None] * len(tactics), pa.string()),
        ],
        schema=schemas.TACTICS,
    )
    return theorem_table, tactic_table


def _annotations(tactics: list) -> pa.ListArray:
    """Each tactic's premise annotations, as one list column."""
    annotations = [t.annotated_tactic[1] for t in tactics]
    flat = [a for anns in annotations for a in anns]
    annotation = pa.StructArray.from_arrays(
        [
            pa.array([a.full_name for a in flat], pa.string()),
            pa.array([a.def_path for a in flat], pa.string()),
            pa.array([a.def_pos for a in flat], schemas.POS),
            pa.array([a.def_end_pos for a in flat], schemas.POS),
        ],
        fields=list(schemas.ANNOTATION),
    )
    offsets = pa.array(list(accumulate((len(a) for a in annotations), initial=0)), pa.int32())
    return pa.ListArray.from_arrays(offsets, annotation, type=pa.list_(schemas.ANNOTATION))
