def n : Nat := 17

theorem foo : n + 17 = 34 := rfl
