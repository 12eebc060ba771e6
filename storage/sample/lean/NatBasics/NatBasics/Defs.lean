/-!
# Definitions

The functions and predicates the other files reason about.
-/

namespace NatBasics

/-- Twice a number, by addition. -/
def double (n : Nat) : Nat := n + n

/-- Three times a number, by addition. -/
def triple (n : Nat) : Nat := n + n + n

/-- The square of a number. -/
def square (n : Nat) : Nat := n * n

/-- `n` is positive. -/
abbrev Pos (n : Nat) : Prop := 0 < n

/-- `n` is even when it is twice some number. -/
def isEven (n : Nat) : Prop := ∃ k, n = 2 * k

/-- The sum `0 + 1 + ⋯ + n`. -/
def sumTo : Nat → Nat
  | 0 => 0
  | n + 1 => sumTo n + (n + 1)

/-- The parity of a number, as data. -/
inductive Parity where
  | even
  | odd
  deriving Repr, DecidableEq

/-- Swap even and odd. -/
def Parity.flip : Parity → Parity
  | .even => .odd
  | .odd => .even

/-- The parity of `n`. -/
def parity (n : Nat) : Parity := if n % 2 = 0 then .even else .odd

instance instInhabitedParity : Inhabited Parity := ⟨.even⟩

/-! ## Unfolding lemmas -/

theorem double_def (n : Nat) : double n = n + n := rfl

theorem triple_def (n : Nat) : triple n = n + n + n := rfl

theorem square_def (n : Nat) : square n = n * n := rfl

theorem sumTo_zero : sumTo 0 = 0 := rfl

theorem sumTo_succ (n : Nat) : sumTo (n + 1) = sumTo n + (n + 1) := rfl

theorem default_parity : (default : Parity) = Parity.even := rfl

/-! ## Parity -/

theorem flip_flip (p : Parity) : p.flip.flip = p := by
  cases p with
  | even => rfl
  | odd => rfl

theorem flip_ne (p : Parity) : p.flip ≠ p := by
  cases p with
  | even => decide
  | odd => decide

theorem parity_zero : parity 0 = Parity.even := by decide

theorem parity_one : parity 1 = Parity.odd := by decide

theorem parity_two : parity 2 = Parity.even := by decide

end NatBasics
