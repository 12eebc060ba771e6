theorem comm (n m : Nat) : n + m = m + n := by
  sorry
