
axiom helper {α : Sort u} : α

theorem comm (n m : Nat) : n + m = m + n := by
  exact helper
