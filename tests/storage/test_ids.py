"""Identities: the batch form gives exactly the ids of the one-at-a-time form."""

from storage.ids import theorem_id, theorem_ids


def test_theorem_ids_equal_theorem_id_for_text_json_escapes():
    paths = ["Mathlib/Order/Basic.lean", 'quote"back\\slash', "ctl\x01\n\t\x1f", "é ⊢ 𝓝", "", "\u2028\x7f/"]
    names = ["Order.le_refl", "é", '"', "\\", "a b", "\x00"]
    repo = 'mathlib4-29dcec0-1f0c2a9e "é"'
    assert theorem_ids(repo, paths, names) == [theorem_id(repo, p, n) for p, n in zip(paths, names)]
