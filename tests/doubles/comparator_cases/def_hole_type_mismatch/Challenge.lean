def n : Nat := sorry

theorem foo : 17 + 17 = 34 := sorry
