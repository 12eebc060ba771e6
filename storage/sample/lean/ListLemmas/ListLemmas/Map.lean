import ListLemmas.Basic

/-!
# Map

`List.map` and `doubleAll`.
-/

namespace ListLemmas

/-- Double every element. -/
def doubleAll : List Nat → List Nat
  | [] => []
  | x :: xs => 2 * x :: doubleAll xs

theorem length_map' {α β : Type} (f : α → β) (xs : List α) : (List.map f xs).length = xs.length := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [ih]

theorem map_append' {α β : Type} (f : α → β) (xs ys : List α) : List.map f (xs ++ ys) = List.map f xs ++ List.map f ys := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [ih]

theorem map_id' {α : Type} (xs : List α) : List.map (fun x => x) xs = xs := by simp

theorem map_map' {α β γ : Type} (f : α → β) (g : β → γ) (xs : List α) : List.map g (List.map f xs) = List.map (g ∘ f) xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [ih]

theorem mem_map_of_mem' {α β : Type} (f : α → β) (x : α) (xs : List α) (h : x ∈ xs) : f x ∈ List.map f xs := by
  rw [List.mem_map]
  exact ⟨x, h, rfl⟩

theorem map_snoc {α β : Type} (f : α → β) (xs : List α) (a : α) : List.map f (snoc xs a) = snoc (List.map f xs) (f a) := by
  rw [snoc_append, snoc_append]
  simp

theorem length_map_const {α : Type} (xs : List α) : (List.map (fun _ => 0) xs).length = xs.length := by
  exact length_map' (fun _ => 0) xs

theorem sum_map_zero {α : Type} (xs : List α) : sum (List.map (fun _ => 0) xs) = 0 := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp only [List.map, sum, ih]

/-! ## `doubleAll` -/

theorem doubleAll_eq_map (xs : List Nat) : doubleAll xs = List.map (fun x => 2 * x) xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih => simp [doubleAll, ih]

theorem sum_doubleAll (xs : List Nat) : sum (doubleAll xs) = 2 * sum xs := by
  induction xs with
  | nil => rfl
  | cons x xs ih =>
    simp only [doubleAll, sum, ih]
    omega

theorem length_doubleAll (xs : List Nat) : (doubleAll xs).length = xs.length := by
  rw [doubleAll_eq_map]
  rw [List.length_map]

theorem doubleAll_append (xs ys : List Nat) : doubleAll (xs ++ ys) = doubleAll xs ++ doubleAll ys := by
  rw [doubleAll_eq_map, doubleAll_eq_map, doubleAll_eq_map]
  exact map_append' _ xs ys

theorem sum_replicate (n k : Nat) : sum (List.replicate n k) = n * k := by
  induction n with
  | zero => simp
  | succ n ih =>
    simp only [List.replicate, sum, ih]
    rw [Nat.add_mul, Nat.one_mul, Nat.add_comm]

theorem doubleAll_snoc (xs : List Nat) (a : Nat) : doubleAll (snoc xs a) = snoc (doubleAll xs) (2 * a) := by
  rw [doubleAll_eq_map, doubleAll_eq_map]
  exact map_snoc (fun x => 2 * x) xs a

theorem map_injective {α β : Type} (f : α → β) (hf : ∀ (a b : α), f a = f b → a = b) (xs ys : List α) (h : List.map f xs = List.map f ys) : xs = ys := by
  induction xs with
  | nil => sorry
  | cons x xs ih => sorry

end ListLemmas
