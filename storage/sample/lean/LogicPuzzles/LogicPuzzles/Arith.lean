import LogicPuzzles.Quantifiers

/-!
# Parity puzzles

Even and odd numbers as existential statements.
-/

namespace LogicPuzzles

/-- `n` is even: `n = k + k` for some `k`. -/
def Even' (n : Nat) : Prop := ∃ k, n = k + k

/-- `n` is odd: `n = k + k + 1` for some `k`. -/
def Odd' (n : Nat) : Prop := ∃ k, n = k + k + 1

theorem even_zero : Even' 0 := ⟨0, rfl⟩

theorem odd_one : Odd' 1 := ⟨0, rfl⟩

theorem even_double (n : Nat) : Even' (n + n) := ⟨n, rfl⟩

theorem even_mul_two (n : Nat) : Even' (2 * n) := by
  refine ⟨n, ?_⟩
  omega

/-! ## Sums -/

theorem even_add (m n : Nat) (hm : Even' m) (hn : Even' n) : Even' (m + n) := by
  obtain ⟨a, ha⟩ := hm
  obtain ⟨b, hb⟩ := hn
  refine ⟨a + b, ?_⟩
  omega

theorem odd_add_odd (m n : Nat) (hm : Odd' m) (hn : Odd' n) : Even' (m + n) := by
  obtain ⟨a, ha⟩ := hm
  obtain ⟨b, hb⟩ := hn
  refine ⟨a + b + 1, ?_⟩
  omega

theorem even_add_odd (m n : Nat) (hm : Even' m) (hn : Odd' n) : Odd' (m + n) := by
  obtain ⟨a, ha⟩ := hm
  obtain ⟨b, hb⟩ := hn
  refine ⟨a + b, ?_⟩
  omega

theorem sum_three_odds (a b c : Nat) (ha : Odd' a) (hb : Odd' b) (hc : Odd' c) : Odd' (a + b + c) := by
  have hab := odd_add_odd a b ha hb
  exact even_add_odd (a + b) c hab hc

/-! ## Successors -/

theorem odd_succ_of_even (n : Nat) (h : Even' n) : Odd' (n + 1) := by
  obtain ⟨k, hk⟩ := h
  refine ⟨k, ?_⟩
  omega

theorem even_succ_of_odd (n : Nat) (h : Odd' n) : Even' (n + 1) := by
  obtain ⟨k, hk⟩ := h
  refine ⟨k + 1, ?_⟩
  omega

theorem even_or_odd (n : Nat) : Even' n ∨ Odd' n := by
  induction n with
  | zero => exact Or.inl ⟨0, rfl⟩
  | succ n ih =>
    rcases ih with ⟨k, hk⟩ | ⟨k, hk⟩
    refine Or.inr ⟨k, ?_⟩
    omega
    refine Or.inl ⟨k + 1, ?_⟩
    omega

theorem even_or_even_succ (n : Nat) : Even' n ∨ Even' (n + 1) := by
  rcases even_or_odd n with h | h
  exact Or.inl h
  exact Or.inr (even_succ_of_odd n h)

/-! ## Exclusivity -/

theorem not_even_and_odd (n : Nat) : ¬(Even' n ∧ Odd' n) := by
  intro h
  obtain ⟨⟨a, ha⟩, ⟨b, hb⟩⟩ := h
  omega

theorem not_odd_zero : ¬Odd' 0 := by
  intro h
  obtain ⟨k, hk⟩ := h
  omega

theorem not_even_both (n : Nat) (h₁ : Even' n) (h₂ : Even' (n + 1)) : False := by
  obtain ⟨a, ha⟩ := h₁
  obtain ⟨b, hb⟩ := h₂
  omega

/-! ## Parity and `%` -/

theorem even_iff_mod (n : Nat) : Even' n ↔ n % 2 = 0 := by
  constructor
  intro h
  obtain ⟨k, hk⟩ := h
  omega
  intro h
  refine ⟨n / 2, ?_⟩
  omega

theorem odd_iff_mod (n : Nat) : Odd' n ↔ n % 2 = 1 := by
  constructor
  intro h
  obtain ⟨k, hk⟩ := h
  omega
  intro h
  refine ⟨n / 2, ?_⟩
  omega

/-! ## Products (open) -/

theorem even_mul (m n : Nat) (hm : Even' m) : Even' (m * n) := by
  obtain ⟨k, hk⟩ := hm
  refine ⟨k * n, ?_⟩
  sorry

theorem odd_mul_odd (m n : Nat) (hm : Odd' m) (hn : Odd' n) : Odd' (m * n) := by sorry

end LogicPuzzles
