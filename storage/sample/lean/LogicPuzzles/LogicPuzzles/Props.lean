/-!
# Propositional logic

Introduction and elimination rules, classical reasoning and exclusive or.
-/

namespace LogicPuzzles

/-- Exactly one of `p` and `q` holds. -/
def Xor' (p q : Prop) : Prop := (p ∧ ¬q) ∨ (¬p ∧ q)

/-! ## Conjunction and disjunction -/

theorem imp_self' (p : Prop) : p → p := fun h => h

theorem and_swap_term (p q : Prop) : p ∧ q → q ∧ p := fun ⟨hp, hq⟩ => ⟨hq, hp⟩

theorem and_swap' (p q : Prop) : p ∧ q → q ∧ p := by
  intro h
  constructor
  exact h.2
  exact h.1

theorem or_swap' (p q : Prop) : p ∨ q → q ∨ p := by
  intro h
  rcases h with hp | hq
  right
  exact hp
  left
  exact hq

theorem and_or_distrib_left' (p q r : Prop) : p ∧ (q ∨ r) ↔ p ∧ q ∨ p ∧ r := by
  constructor
  intro h
  obtain ⟨hp, hq | hr⟩ := h
  exact Or.inl ⟨hp, hq⟩
  exact Or.inr ⟨hp, hr⟩
  intro h
  rcases h with ⟨hp, hq⟩ | ⟨hp, hr⟩
  exact ⟨hp, Or.inl hq⟩
  exact ⟨hp, Or.inr hr⟩

theorem and_self' (p : Prop) : p ∧ p ↔ p := by
  constructor
  intro h
  exact h.1
  intro h
  exact ⟨h, h⟩

theorem or_false' (p : Prop) : p ∨ False ↔ p := by simp

theorem true_and' (p : Prop) : True ∧ p ↔ p := by simp

/-! ## Implication and negation -/

theorem not_not_intro' (p : Prop) : p → ¬¬p := by
  intro hp hnp
  exact hnp hp

theorem contrapositive (p q : Prop) (h : p → q) : ¬q → ¬p := by
  intro hnq hp
  exact hnq (h hp)

theorem imp_trans' (p q r : Prop) (hpq : p → q) (hqr : q → r) : p → r := by
  intro hp
  exact hqr (hpq hp)

theorem and_imp' (p q r : Prop) : (p ∧ q → r) ↔ (p → q → r) := by
  constructor
  intro h hp hq
  exact h ⟨hp, hq⟩
  intro h hpq
  exact h hpq.1 hpq.2

theorem not_or_iff' (p q : Prop) : ¬(p ∨ q) ↔ ¬p ∧ ¬q := by
  constructor
  intro h
  exact ⟨fun hp => h (Or.inl hp), fun hq => h (Or.inr hq)⟩
  intro h hpq
  rcases hpq with hp | hq
  exact h.1 hp
  exact h.2 hq

theorem iff_comm' (p q : Prop) : (p ↔ q) ↔ (q ↔ p) := by
  constructor
  intro h
  exact h.symm
  intro h
  exact h.symm

/-! ## Classical reasoning -/

theorem em_imp (p q : Prop) : (p → q) → ¬p ∨ q := by
  intro h
  by_cases hp : p
  exact Or.inr (h hp)
  exact Or.inl hp

theorem peirce (p q : Prop) : ((p → q) → p) → p := by
  intro h
  by_cases hp : p
  exact hp
  exact h (fun hp' => absurd hp' hp)

theorem not_not_elim (p : Prop) : ¬¬p → p := by
  intro h
  by_cases hp : p
  exact hp
  exact absurd hp h

theorem de_morgan_classical (p q : Prop) : ¬(p ∧ q) → ¬p ∨ ¬q := by
  intro h
  sorry

/-! ## Exclusive or -/

theorem xor_comm' (p q : Prop) : Xor' p q → Xor' q p := by
  intro h
  unfold Xor' at h ⊢
  rcases h with ⟨hp, hnq⟩ | ⟨hnp, hq⟩
  exact Or.inr ⟨hnq, hp⟩
  exact Or.inl ⟨hq, hnp⟩

theorem xor_self (p : Prop) : ¬Xor' p p := by
  intro h
  rcases h with ⟨hp, hnp⟩ | ⟨hnp, hp⟩
  exact hnp hp
  exact hnp hp

theorem xor_false (p : Prop) (h : Xor' p False) : p := by
  unfold Xor' at h
  simp at h
  exact h

end LogicPuzzles
