"""A small built-in corpus of Lean 4 text, used to train the tiny local tokenizers.

The tiny models (`tasks/models/tiny.py`) need a tokenizer that splits Lean source
and proof states into sensible pieces without downloading anything. Byte-level BPE
trained on this text covers every byte (so nothing is ever unknown) and learns the
common words of Lean (`theorem`, `simp`, `⊢`, `Nat.succ`, ...), which keeps
sequences short. Changing this text changes the tokenizers, hence the models: bump
`tiny.BUILDER_VERSION` when you edit it.
"""

from __future__ import annotations

LEAN_TEXT = r"""
import Mathlib.Data.Nat.Basic
import Mathlib.Algebra.Group.Basic
import Mathlib.Order.Basic
open Nat List Finset

namespace Example

theorem add_zero' (n : ℕ) : n + 0 = n := by
  simp

theorem zero_add' (n : ℕ) : 0 + n = n := by
  induction n with
  | zero => rfl
  | succ n ih => rw [Nat.add_succ, ih]

theorem add_comm' (a b : ℕ) : a + b = b + a := by
  omega

lemma mul_comm' (a b : ℕ) : a * b = b * a := by
  exact Nat.mul_comm a b

theorem and_swap (p q : Prop) (h : p ∧ q) : q ∧ p := by
  obtain ⟨hp, hq⟩ := h
  exact ⟨hq, hp⟩

theorem or_swap (p q : Prop) : p ∨ q → q ∨ p := by
  intro h
  cases h with
  | inl hp => exact Or.inr hp
  | inr hq => exact Or.inl hq

theorem imp_trans {p q r : Prop} (hpq : p → q) (hqr : q → r) : p → r := by
  intro hp
  apply hqr
  apply hpq
  exact hp

theorem le_of_lt' {a b : ℕ} (h : a < b) : a ≤ b := by
  exact Nat.le_of_lt h

theorem length_append' {α : Type*} (l₁ l₂ : List α) :
    (l₁ ++ l₂).length = l₁.length + l₂.length := by
  simp [List.length_append]

theorem exists_gt (n : ℕ) : ∃ m, n < m := by
  refine ⟨n + 1, ?_⟩
  exact Nat.lt_succ_self n

theorem forall_congr'' {α : Type*} {p q : α → Prop} (h : ∀ x, p x ↔ q x) :
    (∀ x, p x) ↔ ∀ x, q x := by
  constructor
  · intro hp x
    exact (h x).mp (hp x)
  · intro hq x
    exact (h x).mpr (hq x)

theorem sum_range_id (n : ℕ) : ∑ i ∈ range n, i * 2 = n * (n - 1) := by
  induction n with
  | zero => simp
  | succ n ih =>
    rw [Finset.sum_range_succ, ih]
    cases n <;> simp [Nat.succ_sub_one, Nat.mul_succ] <;> ring

theorem neg_neg' {G : Type*} [Group G] (a : G) : (a⁻¹)⁻¹ = a := by
  simp only [inv_inv]

theorem sub_self' (a : ℤ) : a - a = 0 := by
  linarith

theorem pos_of_ne_zero' {n : ℕ} (h : n ≠ 0) : 0 < n := by
  positivity

example (x y : ℝ) (hx : 0 ≤ x) (hy : 0 ≤ y) : 0 ≤ x * y := by
  nlinarith [mul_nonneg hx hy]

example (s t : Set ℕ) (h : s ⊆ t) (x : ℕ) (hx : x ∈ s) : x ∈ t := by
  exact h hx

example (f : ℕ → ℕ) (hf : ∀ x, f x = x) : f (f 2) = 2 := by
  rw [hf, hf]

example (a b c : ℕ) (h₁ : a ≤ b) (h₂ : b ≤ c) : a ≤ c := by
  calc a ≤ b := h₁
    _ ≤ c := h₂

example (n : ℕ) (h : n % 2 = 1) : n ≠ 0 := by
  intro hn
  subst hn
  norm_num at h

example : ¬ (1 : ℕ) = 2 := by decide

end Example
"""

STATES_TEXT = r"""
n : ℕ
⊢ n + 0 = n
case zero
⊢ 0 + 0 = 0
case succ
n : ℕ
ih : 0 + n = n
⊢ 0 + (n + 1) = n + 1
a b : ℕ
⊢ a + b = b + a
p q : Prop
h : p ∧ q
⊢ q ∧ p
p q : Prop
hp : p
hq : q
⊢ q ∧ p
p q r : Prop
hpq : p → q
hqr : q → r
hp : p
⊢ r
α : Type u_1
l₁ l₂ : List α
⊢ (l₁ ++ l₂).length = l₁.length + l₂.length
n : ℕ
⊢ ∃ m, n < m
case h
n : ℕ
⊢ n < n + 1
α : Type u_1
p q : α → Prop
h : ∀ (x : α), p x ↔ q x
⊢ (∀ (x : α), p x) ↔ ∀ (x : α), q x
G : Type u_1
inst✝ : Group G
a : G
⊢ a⁻¹⁻¹ = a
x y : ℝ
hx : 0 ≤ x
hy : 0 ≤ y
⊢ 0 ≤ x * y
s t : Set ℕ
h : s ⊆ t
x : ℕ
hx : x ∈ s
⊢ x ∈ t
f : ℕ → ℕ
hf : ∀ (x : ℕ), f x = x
⊢ f (f 2) = 2
a b c : ℕ
h₁ : a ≤ b
h₂ : b ≤ c
⊢ a ≤ c
no goals
"""

TACTICS_TEXT = r"""
simp
simp only [Nat.add_zero]
simp at h ⊢
simp_all
rfl
omega
linarith
nlinarith [sq_nonneg (a - b)]
norm_num
norm_num at h
positivity
decide
ring
ring_nf
field_simp
aesop
intro h
intro x hx
intros
rintro ⟨h₁, h₂⟩
obtain ⟨x, hx⟩ := h
rcases h with ⟨a, b⟩ | h
cases h
induction n with
induction' n with n ih
constructor
refine ⟨_, _⟩
use 1
exists 0
exact h
exact h.1
exact h.2
exact Nat.le_of_lt h
exact le_refl _
exact fun x => h x
apply Nat.succ_le_of_lt
apply h
apply And.intro
rw [h]
rw [Nat.add_comm]
rw [← h, Nat.mul_comm] at h₂
rwa [h] at hx
specialize h 0
have h₃ : a ≤ c := le_trans h₁ h₂
have := h 0
show a = b
unfold f
subst h
contradiction
exfalso
by_contra h
by_cases h : x = 0
push_neg at h
split_ifs with h
ext x
funext x
congr 1
gcongr
trivial
assumption
left
right
sorry
"""


def corpus_lines() -> list[str]:
    """The corpus as training lines for the tokenizer trainer (order matters for nothing)."""
    lines: list[str] = []
    for text in (LEAN_TEXT, STATES_TEXT, TACTICS_TEXT):
        lines.extend(line for line in text.splitlines() if line.strip())
    # Whole blocks too, so that newlines and indentation get merged tokens.
    lines.extend(block for block in LEAN_TEXT.split("\n\n") if block.strip())
    return lines
