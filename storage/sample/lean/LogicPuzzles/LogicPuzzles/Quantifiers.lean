import LogicPuzzles.Props

/-!
# Quantifiers

`∀` and `∃`, over any type and over `Nat`.
-/

namespace LogicPuzzles

theorem forall_and' {α : Type} (P Q : α → Prop) : (∀ x, P x ∧ Q x) ↔ (∀ x, P x) ∧ (∀ x, Q x) := by
  constructor
  intro h
  exact ⟨fun x => (h x).1, fun x => (h x).2⟩
  intro h x
  exact ⟨h.1 x, h.2 x⟩

theorem exists_or' {α : Type} (P Q : α → Prop) : (∃ x, P x ∨ Q x) → (∃ x, P x) ∨ (∃ x, Q x) := by
  intro h
  obtain ⟨x, hx⟩ := h
  rcases hx with hp | hq
  exact Or.inl ⟨x, hp⟩
  exact Or.inr ⟨x, hq⟩

theorem not_exists' {α : Type} (P : α → Prop) : (¬∃ x, P x) ↔ ∀ x, ¬P x := by
  constructor
  intro h x hx
  exact h ⟨x, hx⟩
  intro h hex
  obtain ⟨x, hx⟩ := hex
  exact h x hx

theorem exists_of_forall {α : Type} [Inhabited α] (P : α → Prop) (h : ∀ (x : α), P x) : ∃ x, P x := by
  exact ⟨default, h default⟩

theorem forall_swap' {α β : Type} (R : α → β → Prop) : (∀ (x : α) (y : β), R x y) → ∀ (y : β) (x : α), R x y := by
  intro h y x
  exact h x y

theorem exists_comm' {α β : Type} (R : α → β → Prop) : (∃ x y, R x y) → ∃ y x, R x y := by
  intro h
  obtain ⟨x, y, hxy⟩ := h
  exact ⟨y, x, hxy⟩

theorem forall_imp' {α : Type} (P Q : α → Prop) (h : ∀ (x : α), P x → Q x) : (∀ (x : α), P x) → ∀ (x : α), Q x := by
  intro hp x
  exact h x (hp x)

theorem exists_imp' {α : Type} (P Q : α → Prop) (h : ∀ (x : α), P x → Q x) : (∃ x, P x) → ∃ x, Q x := by
  intro hex
  obtain ⟨x, hx⟩ := hex
  exact ⟨x, h x hx⟩

theorem not_forall_of_exists_not {α : Type} (P : α → Prop) : (∃ x, ¬P x) → ¬∀ (x : α), P x := by
  intro hex h
  obtain ⟨x, hx⟩ := hex
  exact hx (h x)

theorem not_forall_classical {α : Type} (P : α → Prop) : (¬∀ (x : α), P x) → ∃ x, ¬P x := by
  intro h
  sorry

/-! ## Quantifiers over `Nat` -/

theorem exists_gt (n : Nat) : ∃ m, m > n := by
  refine ⟨n + 1, ?_⟩
  omega

theorem forall_exists_double : ∀ (n : Nat), ∃ m, m = n + n := by
  intro n
  exact ⟨n + n, rfl⟩

theorem no_largest : ¬∃ n : Nat, ∀ m, m ≤ n := by
  intro h
  obtain ⟨n, hn⟩ := h
  have h1 := hn (n + 1)
  omega

theorem exists_unique_zero : ∃ n : Nat, n + n = n ∧ ∀ m, m + m = m → m = 0 := by
  refine ⟨0, rfl, ?_⟩
  intro m hm
  omega

theorem exists_between (a b : Nat) (h : a + 1 < b) : ∃ c, a < c ∧ c < b := by
  refine ⟨a + 1, ?_⟩
  constructor
  omega
  exact h

end LogicPuzzles
