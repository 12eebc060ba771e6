import NatBasics.Add

/-!
# Multiplication

Products, `double` as `2 * n`, squares.
-/

namespace NatBasics

theorem mul_one' (n : Nat) : n * 1 = n := by simp

theorem one_mul' (n : Nat) : 1 * n = n := by simp

theorem mul_zero' (n : Nat) : n * 0 = 0 := by simp

theorem zero_mul' (n : Nat) : 0 * n = 0 := by simp

theorem mul_comm' (n m : Nat) : n * m = m * n := by rw [Nat.mul_comm]

theorem mul_assoc' (a b c : Nat) : a * b * c = a * (b * c) := by rw [Nat.mul_assoc]

theorem mul_add' (a b c : Nat) : a * (b + c) = a * b + a * c := by rw [Nat.mul_add]

theorem add_mul' (a b c : Nat) : (a + b) * c = a * c + b * c := by rw [Nat.add_mul]

theorem mul_le_mul_left' (a b c : Nat) (h : a ≤ b) : c * a ≤ c * b := by
  exact Nat.mul_le_mul_left c h

/-! ## `double` as a product -/

theorem two_mul_eq_double (n : Nat) : 2 * n = double n := by rw [double_eq_two_mul]

theorem mul_two' (n : Nat) : n * 2 = double n := by
  rw [double_eq_two_mul]
  rw [Nat.mul_comm]

theorem double_mul (n m : Nat) : double (n * m) = double n * m := by
  rw [double_eq_two_mul, double_eq_two_mul, Nat.mul_assoc]

theorem double_double (n : Nat) : double (double n) = 4 * n := by
  rw [double_eq_two_mul, double_eq_two_mul]
  omega

theorem triple_eq_mul_three (n : Nat) : triple n = n * 3 := by
  unfold triple
  omega

/-! ## Squares -/

theorem square_zero : square 0 = 0 := rfl

theorem square_one : square 1 = 1 := by decide

theorem square_two : square 2 = 4 := by decide

theorem mul_self_eq_square (n : Nat) : n * n = square n := rfl

theorem double_square (n : Nat) : double (square n) = 2 * square n := by rw [double_eq_two_mul]

theorem square_mul (n m : Nat) : square (n * m) = square n * square m := by
  unfold square
  simp only [Nat.mul_assoc, Nat.mul_comm, Nat.mul_left_comm]

theorem square_add (a b : Nat) : square (a + b) = square a + 2 * a * b + square b := by
  unfold square
  sorry

end NatBasics
