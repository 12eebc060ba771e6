import LogicPuzzles.Props

/-!
# Knights and knaves

Smullyan's island: knights always tell the truth, knaves always lie.
-/

namespace LogicPuzzles

/-- On the island every inhabitant is a knight, who always tells the truth,
or a knave, who always lies. -/
inductive Role where
  | knight
  | knave
  deriving DecidableEq, Repr

/-- What someone of role `r` can say: a knight's statements are true,
a knave's are false. -/
def Role.says (r : Role) (p : Prop) : Prop := (r = Role.knight ↔ p)

theorem knight_ne_knave : Role.knight ≠ Role.knave := by decide

theorem says_knight (p : Prop) : Role.knight.says p ↔ p := by simp [Role.says]

theorem says_knave (p : Prop) : Role.knave.says p ↔ ¬p := by simp [Role.says]

theorem says_iff (r : Role) (p : Prop) : r.says p ↔ (r = Role.knight ↔ p) := Iff.rfl

theorem role_cases (r : Role) : r = Role.knight ∨ r = Role.knave := by
  cases r with
  | knight => exact Or.inl rfl
  | knave => exact Or.inr rfl

theorem not_knight (r : Role) (h : r ≠ Role.knight) : r = Role.knave := by
  cases r with
  | knight => exact absurd rfl h
  | knave => rfl

theorem knave_says_false (r : Role) (p : Prop) (h : r.says p) (hr : r = Role.knave) : ¬p := by
  subst hr
  exact (says_knave p).mp h

theorem knight_says_true (r : Role) (p : Prop) (h : r.says p) (hr : r = Role.knight) : p := by
  subst hr
  exact (says_knight p).mp h

theorem says_self_knight (r : Role) : r.says (r = Role.knight) := by
  unfold Role.says
  exact Iff.rfl

theorem says_not_knave (r : Role) : ¬r.says (r = Role.knave) := by
  intro h
  cases r with
  | knight => simp [Role.says] at h
  | knave => simp [Role.says] at h

/-! ## Puzzles

Each puzzle fixes what the islanders say and asks who is who. -/

theorem puzzle_both_knaves (a b : Role) (h : a.says (a = Role.knave ∧ b = Role.knave)) : a = Role.knave ∧ b = Role.knight := by
  unfold Role.says at h
  cases a with
  | knight => simp at h
  | knave =>
    cases b with
    | knight => exact ⟨rfl, rfl⟩
    | knave => simp at h

theorem puzzle_accuse (a b : Role) (ha : a.says (b = Role.knave)) (hb : b.says (a = b)) : a = Role.knight ∧ b = Role.knave := by
  unfold Role.says at ha hb
  cases a with
  | knight =>
    cases b with
    | knight => simp at ha
    | knave => exact ⟨rfl, rfl⟩
  | knave =>
    cases b with
    | knight => simp at hb
    | knave => simp at ha

theorem puzzle_same_kind (a b : Role) (h : a.says (a = b)) : b = Role.knight := by
  unfold Role.says at h
  cases a with
  | knight =>
    cases b with
    | knight => rfl
    | knave => simp at h
  | knave =>
    cases b with
    | knight => rfl
    | knave => simp at h

theorem puzzle_or (a b : Role) (h : a.says (a = Role.knave ∨ b = Role.knight)) : a = Role.knight ∧ b = Role.knight := by
  unfold Role.says at h
  cases a with
  | knight =>
    cases b with
    | knight => exact ⟨rfl, rfl⟩
    | knave => simp at h
  | knave => simp at h

theorem puzzle_three (a b c : Role) (ha : a.says (b = Role.knave)) (hb : b.says (c = Role.knave)) (hc : c.says (a = Role.knave ∧ b = Role.knave)) : a = Role.knave ∧ b = Role.knight ∧ c = Role.knave := by
  unfold Role.says at ha hb hc
  sorry

end LogicPuzzles
