/-!
# Basic definitions

`sum`, `snoc`, `rev`, `countP`, `All` and `Pair`.
-/

namespace ListLemmas

/-- The sum of a list of numbers. -/
def sum : List Nat → Nat
  | [] => 0
  | x :: xs => x + sum xs

/-- Append one element at the end. -/
def snoc {α : Type} : List α → α → List α
  | [], a => [a]
  | x :: xs, a => x :: snoc xs a

/-- List reversal, the slow way: by `snoc`. -/
def rev {α : Type} : List α → List α
  | [] => []
  | x :: xs => snoc (rev xs) x

/-- How many elements satisfy `p`. -/
def countP {α : Type} (p : α → Bool) : List α → Nat
  | [] => 0
  | x :: xs => (if p x then 1 else 0) + countP p xs

/-- Every element of the list satisfies `P`. -/
inductive All {α : Type} (P : α → Prop) : List α → Prop where
  | nil : All P []
  | cons {x : α} {xs : List α} : P x → All P xs → All P (x :: xs)

/-- Two values of one type. -/
structure Pair (α : Type) where
  fst : α
  snd : α
  deriving Repr

/-- Exchange the two components. -/
def Pair.swap {α : Type} (p : Pair α) : Pair α := ⟨p.snd, p.fst⟩

instance instInhabitedPair {α : Type} [Inhabited α] : Inhabited (Pair α) := ⟨⟨default, default⟩⟩

/-! ## Equations -/

@[simp] theorem sum_nil : sum [] = 0 := rfl

@[simp] theorem sum_cons (x : Nat) (xs : List Nat) : sum (x :: xs) = x + sum xs := rfl

theorem snoc_nil {α : Type} (a : α) : snoc [] a = [a] := rfl

theorem snoc_cons {α : Type} (x a : α) (xs : List α) : snoc (x :: xs) a = x :: snoc xs a := rfl

theorem countP_nil {α : Type} (p : α → Bool) : countP p [] = 0 := rfl

/-! ## `sum` and `snoc` -/

theorem sum_singleton (x : Nat) : sum [x] = x := by simp [sum]

theorem sum_append (xs ys : List Nat) : sum (xs ++ ys) = sum xs + sum ys := by
  induction xs with
  | nil => simp [sum]
  | cons x xs ih =>
    simp only [List.cons_append, sum]
    omega

theorem length_snoc {α : Type} (xs : List α) (a : α) : (snoc xs a).length = xs.length + 1 := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [snoc, ih]

theorem snoc_append {α : Type} (xs : List α) (a : α) : snoc xs a = xs ++ [a] := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [snoc, ih]

theorem sum_snoc (xs : List Nat) (a : Nat) : sum (snoc xs a) = sum xs + a := by
  rw [snoc_append, sum_append]
  rw [sum_singleton]

/-! ## `countP` -/

theorem countP_le_length {α : Type} (p : α → Bool) (xs : List α) : countP p xs ≤ xs.length := by
  induction xs with
  | nil => simp [countP]
  | cons x xs ih =>
    simp only [countP, List.length_cons]
    split
    omega
    omega

theorem countP_append {α : Type} (p : α → Bool) (xs ys : List α) : countP p (xs ++ ys) = countP p xs + countP p ys := by
  induction xs with
  | nil => simp [countP]
  | cons x xs ih =>
    simp only [List.cons_append, countP, ih]
    omega

/-! ## `All` -/

theorem all_nil {α : Type} (P : α → Prop) : All P [] := All.nil

theorem all_append {α : Type} {P : α → Prop} {xs ys : List α} (h₁ : All P xs) (h₂ : All P ys) : All P (xs ++ ys) := by
  induction h₁ with
  | nil => exact h₂
  | cons hx _ ih => exact All.cons hx ih

theorem all_snoc {α : Type} {P : α → Prop} (xs : List α) (a : α) : All P xs → P a → All P (snoc xs a) := by
  intro h ha
  rw [snoc_append]
  exact all_append h (All.cons ha All.nil)

theorem all_of_forall {α : Type} {P : α → Prop} (xs : List α) (h : ∀ (x : α), P x) : All P xs := by
  induction xs with
  | nil => exact All.nil
  | cons x xs ih => exact All.cons (h x) ih

/-! ## `Pair` -/

theorem swap_swap {α : Type} (p : Pair α) : p.swap.swap = p := by
  cases p
  rfl

theorem swap_fst {α : Type} (p : Pair α) : p.swap.fst = p.snd := rfl

theorem swap_snd {α : Type} (p : Pair α) : p.swap.snd = p.fst := rfl

end ListLemmas
