theorem comm (n m : Nat) : n + m = m + n := by
  grind
