import ListLemmas.Basic
import ListLemmas.Append

/-!
# Reverse

`rev`, defined with `snoc`, agrees with `List.reverse`.
-/

namespace ListLemmas

theorem rev_nil {α : Type} : rev ([] : List α) = [] := rfl

theorem rev_singleton {α : Type} (a : α) : rev [a] = [a] := rfl

theorem rev_snoc {α : Type} (xs : List α) (a : α) : rev (snoc xs a) = a :: rev xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [snoc, rev, ih]

theorem rev_rev {α : Type} (xs : List α) : rev (rev xs) = xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [rev, rev_snoc, ih]

theorem rev_eq_reverse {α : Type} (xs : List α) : rev xs = xs.reverse := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [rev, snoc_append, ih]

theorem length_rev {α : Type} (xs : List α) : (rev xs).length = xs.length := by
  rw [rev_eq_reverse]
  rw [List.length_reverse]

theorem rev_append {α : Type} (xs ys : List α) : rev (xs ++ ys) = rev ys ++ rev xs := by
  simp [rev_eq_reverse]

theorem length_rev_append {α : Type} (xs ys : List α) : (rev (xs ++ ys)).length = xs.length + ys.length := by
  rw [length_rev]
  exact length_append' xs ys

theorem sum_rev (xs : List Nat) : sum (rev xs) = sum xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    simp only [rev, sum_snoc, ih, sum]
    omega

theorem mem_rev {α : Type} (x : α) (xs : List α) : x ∈ rev xs ↔ x ∈ xs := by
  rw [rev_eq_reverse]
  exact List.mem_reverse

theorem rev_inj {α : Type} (xs ys : List α) : rev xs = rev ys → xs = ys := by
  intro h
  have h' := congrArg rev h
  simpa [rev_rev] using h'

theorem rev_palindrome_mem {α : Type} (xs : List α) (x : α) (h : rev xs = xs) (hx : x ∈ xs) : x ∈ rev xs := by
  rw [h]
  exact hx

theorem rev_snoc_snoc {α : Type} (xs : List α) (a b : α) : rev (snoc (snoc xs a) b) = b :: a :: rev xs := by
  rw [rev_snoc]
  rw [rev_snoc]

theorem countP_rev {α : Type} (p : α → Bool) (xs : List α) : countP p (rev xs) = countP p xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    simp only [rev, countP]
    sorry

end ListLemmas
