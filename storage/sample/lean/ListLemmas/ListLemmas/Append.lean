import ListLemmas.Basic

/-!
# Append

Lemmas about `++`, membership and `snoc`.
-/

namespace ListLemmas

theorem append_nil' {α : Type} (xs : List α) : xs ++ [] = xs := by simp

theorem nil_append' {α : Type} (xs : List α) : [] ++ xs = xs := rfl

theorem append_assoc' {α : Type} (xs ys zs : List α) : xs ++ ys ++ zs = xs ++ (ys ++ zs) := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp only [List.cons_append, ih]

theorem length_append' {α : Type} (xs ys : List α) : (xs ++ ys).length = xs.length + ys.length := by
  induction xs with
  | nil => simp
  | cons x xs ih =>
    simp only [List.cons_append, List.length_cons, ih]
    omega

theorem append_eq_nil_left {α : Type} (xs ys : List α) (h : xs ++ ys = []) : xs = [] := by
  cases xs with
  | nil => rfl
  | cons x xs => simp at h

theorem append_cancel_left' {α : Type} (xs ys zs : List α) : xs ++ ys = xs ++ zs → ys = zs := by
  intro h
  exact List.append_cancel_left h

theorem append_ne_nil_of_left {α : Type} (xs ys : List α) (h : xs ≠ []) : xs ++ ys ≠ [] := by
  simp [h]

theorem length_append_le {α : Type} (xs ys : List α) : xs.length ≤ (xs ++ ys).length := by
  rw [List.length_append]
  omega

theorem length_append_comm {α : Type} (xs ys : List α) : (xs ++ ys).length = (ys ++ xs).length := by
  simp only [List.length_append]
  rw [Nat.add_comm]

/-! ## Membership -/

theorem mem_append_left' {α : Type} (x : α) (xs ys : List α) (h : x ∈ xs) : x ∈ xs ++ ys := by
  simp [h]

theorem mem_append_right' {α : Type} (x : α) (xs ys : List α) (h : x ∈ ys) : x ∈ xs ++ ys := by
  simp [h]

theorem mem_snoc {α : Type} (xs : List α) (a : α) : a ∈ snoc xs a := by
  rw [snoc_append]
  simp

theorem snoc_ne_nil {α : Type} (xs : List α) (a : α) : snoc xs a ≠ [] := by
  rw [snoc_append]
  simp

theorem snoc_append_assoc {α : Type} (xs ys : List α) (a : α) : snoc (xs ++ ys) a = xs ++ snoc ys a := by
  rw [snoc_append, snoc_append]
  exact append_assoc' xs ys [a]

/-! ## Sums of appended lists -/

theorem sum_append_comm (xs ys : List Nat) : sum (xs ++ ys) = sum (ys ++ xs) := by
  rw [sum_append, sum_append]
  omega

theorem sum_append_three (xs ys zs : List Nat) : sum (xs ++ ys ++ zs) = sum xs + sum ys + sum zs := by
  rw [sum_append, sum_append]

theorem sum_snoc_snoc (xs : List Nat) (a b : Nat) : sum (snoc (snoc xs a) b) = sum xs + a + b := by
  rw [sum_snoc]
  rw [sum_snoc]

theorem sum_le_sum_append (xs ys : List Nat) : sum xs ≤ sum (xs ++ ys) := by
  rw [sum_append]
  omega

theorem length_snoc_pos {α : Type} (xs : List α) (a : α) : 0 < (snoc xs a).length := by
  rw [length_snoc]
  omega

theorem countP_le_countP_append {α : Type} (p : α → Bool) (xs ys : List α) : countP p xs ≤ countP p (xs ++ ys) := by
  rw [countP_append]
  omega

theorem append_inj {α : Type} (xs ys zs ws : List α) (h : xs ++ ys = zs ++ ws) (hl : xs.length = zs.length) : xs = zs ∧ ys = ws := by
  sorry

end ListLemmas
