import NatBasics.Defs

/-!
# Addition

Addition, `double`, `triple` and `sumTo`.
-/

namespace NatBasics

theorem add_zero' (n : Nat) : n + 0 = n := by simp

theorem zero_add' (n : Nat) : 0 + n = n := by simp

theorem add_comm' (n m : Nat) : n + m = m + n := by rw [Nat.add_comm]

theorem add_assoc' (a b c : Nat) : a + b + c = a + (b + c) := by rw [Nat.add_assoc]

theorem add_left_comm' (a b c : Nat) : a + (b + c) = b + (a + c) := by rw [Nat.add_left_comm]

theorem add_right_comm' (a b c : Nat) : a + b + c = a + c + b := by rw [Nat.add_right_comm]

theorem add_succ' (n m : Nat) : n + (m + 1) = n + m + 1 := by rw [← Nat.add_assoc]

theorem succ_add' (n m : Nat) : n + 1 + m = n + m + 1 := by omega

theorem add_one_ne_zero' (n : Nat) : n + 1 ≠ 0 := by omega

theorem add_eq_zero_left (n m : Nat) (h : n + m = 0) : n = 0 := by omega

theorem add_right_cancel' (a b c : Nat) (h : a + c = b + c) : a = b := by omega

theorem add_left_cancel' (a b c : Nat) (h : c + a = c + b) : a = b := by omega

theorem add_comm_three (a b c : Nat) : a + b + c = c + b + a := by omega

/-! ## `double` and `triple` -/

theorem double_zero : double 0 = 0 := rfl

theorem double_one : double 1 = 2 := by decide

theorem add_self_eq_double (n : Nat) : n + n = double n := rfl

theorem double_add (n m : Nat) : double (n + m) = double n + double m := by
  unfold double
  omega

theorem double_eq_two_mul (n : Nat) : double n = 2 * n := by
  unfold double
  omega

theorem triple_eq_three_mul (n : Nat) : triple n = 3 * n := by
  unfold triple
  omega

theorem double_add_double (n m : Nat) : double n + double m = double (n + m) := by rw [double_add]

theorem triple_add (n m : Nat) : triple (n + m) = triple n + triple m := by
  unfold triple
  omega

theorem double_le_triple (n : Nat) : double n ≤ triple n := by
  unfold double triple
  omega

theorem double_add_one_ne (n m : Nat) : double n ≠ double m + 1 := by
  unfold double
  omega

theorem double_triple (n : Nat) : double (triple n) = triple (double n) := by
  unfold double triple
  omega

theorem double_pos (n : Nat) (h : 0 < n) : 0 < double n := by
  unfold double
  omega

/-! ## Even numbers and positivity -/

theorem isEven_zero : isEven 0 := ⟨0, rfl⟩

theorem isEven_double (n : Nat) : isEven (double n) := by
  refine ⟨n, ?_⟩
  rw [double_eq_two_mul]

theorem isEven_add (m n : Nat) (hm : isEven m) (hn : isEven n) : isEven (m + n) := by
  obtain ⟨a, ha⟩ := hm
  obtain ⟨b, hb⟩ := hn
  refine ⟨a + b, ?_⟩
  omega

theorem pos_add (n m : Nat) (h : Pos n) : Pos (n + m) := by
  unfold Pos at h ⊢
  omega

/-! ## Sums -/

theorem sumTo_one : sumTo 1 = 1 := by decide

theorem sumTo_two : sumTo 2 = 3 := by decide

theorem sumTo_pos (n : Nat) (h : 0 < n) : 0 < sumTo n := by
  cases n with
  | zero => exact absurd h (Nat.lt_irrefl 0)
  | succ n =>
    rw [sumTo_succ]
    omega

theorem le_sumTo (n : Nat) : n ≤ sumTo n := by
  induction n with
  | zero => exact Nat.zero_le _
  | succ n ih =>
    rw [sumTo_succ]
    omega

theorem sumTo_formula (n : Nat) : 2 * sumTo n = n * (n + 1) := by sorry

end NatBasics
