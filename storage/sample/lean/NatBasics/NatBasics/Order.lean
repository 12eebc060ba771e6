import NatBasics.Add

/-!
# Order

`≤`, `<`, `min`, `max` and monotonicity.
-/

namespace NatBasics

theorem le_refl' (n : Nat) : n ≤ n := by exact Nat.le_refl n

theorem le_succ' (n : Nat) : n ≤ n + 1 := by omega

theorem le_trans' (a b c : Nat) (h₁ : a ≤ b) (h₂ : b ≤ c) : a ≤ c := by exact Nat.le_trans h₁ h₂

theorem lt_irrefl' (n : Nat) : ¬n < n := by omega

theorem le_add_right' (n m : Nat) : n ≤ n + m := by exact Nat.le_add_right n m

theorem lt_of_lt_of_le' (a b c : Nat) (h₁ : a < b) (h₂ : b ≤ c) : a < c := by omega

theorem le_antisymm' (a b : Nat) (h₁ : a ≤ b) (h₂ : b ≤ a) : a = b := by exact Nat.le_antisymm h₁ h₂

theorem pos_of_ne_zero' (n : Nat) (h : n ≠ 0) : 0 < n := by omega

theorem succ_le_of_lt' (n m : Nat) (h : n < m) : n + 1 ≤ m := by exact h

theorem lt_succ_iff' (n m : Nat) : n < m + 1 ↔ n ≤ m := by
  constructor
  intro h
  omega
  intro h
  omega

theorem max_self' (n : Nat) : max n n = n := by omega

theorem min_le_left' (a b : Nat) : min a b ≤ a := by omega

theorem le_max_left' (a b : Nat) : a ≤ max a b := by omega

theorem sub_self' (n : Nat) : n - n = 0 := by simp

theorem sub_le' (n m : Nat) : n - m ≤ n := by exact Nat.sub_le n m

theorem add_sub_cancel' (n m : Nat) : n + m - m = n := by omega

/-! ## Monotonicity of `double` and `triple` -/

theorem le_double (n : Nat) : n ≤ double n := by
  unfold double
  omega

theorem lt_double (n : Nat) (h : 0 < n) : n < double n := by
  unfold double
  omega

theorem double_mono (n m : Nat) (h : n ≤ m) : double n ≤ double m := by
  unfold double
  omega

theorem double_lt_double (n m : Nat) (h : n < m) : double n < double m := by
  unfold double
  omega

theorem le_of_double_le (n m : Nat) (h : double n ≤ double m) : n ≤ m := by
  unfold double at h
  omega

theorem triple_mono (n m : Nat) (h : n ≤ m) : triple n ≤ triple m := by
  unfold triple
  omega

theorem pos_double (n : Nat) (h : Pos n) : Pos (double n) := by
  unfold Pos at h ⊢
  exact double_pos n h

end NatBasics
