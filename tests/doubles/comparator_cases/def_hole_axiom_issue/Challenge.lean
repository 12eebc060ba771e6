def n : Nat := sorry

theorem foo : n + 17 = 34 := sorry
