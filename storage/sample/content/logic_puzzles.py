"""LogicPuzzles: the hard sample repository. Propositional and first-order logic,
knights-and-knaves puzzles and parity arguments: proofs of four to nine tactics with
several goals at once (`constructor`, `rcases`, `by_cases`, nested `cases`), and more
theorems left as `sorry` than the other two repositories.
"""

from __future__ import annotations

from storage.sample.lean_model import Comment, Decl, LeanFile, LeanRepo, S, alt, block, g, gs, term, thm

NAME = "LogicPuzzles"
PQ = "p q : Prop"
PQR = "p q r : Prop"
K, V = "Role.knight", "Role.knave"


def _props() -> LeanFile:
    d = "p q r : Prop"
    items = (
        Decl(
            "def",
            "Xor'",
            "/-- Exactly one of `p` and `q` holds. -/\ndef Xor' (p q : Prop) : Prop := (p ∧ ¬q) ∨ (¬p ∧ q)",
        ),
        Comment("/-! ## Conjunction and disjunction -/"),
        term("imp_self'", "(p : Prop)", "p → p", "fun h => h"),
        term("and_swap_term", "(p q : Prop)", "p ∧ q → q ∧ p", "fun ⟨hp, hq⟩ => ⟨hq, hp⟩"),
        thm(
            "and_swap'",
            "(p q : Prop)",
            "p ∧ q → q ∧ p",
            S("intro h", g(f"{PQ}\nh : p ∧ q", "q ∧ p")),
            S("constructor", gs(g(f"{PQ}\nh : p ∧ q", "q", "left"), g(f"{PQ}\nh : p ∧ q", "p", "right"))),
            S("exact h.2", g(f"{PQ}\nh : p ∧ q", "p", "right")),
            S("exact h.1"),
        ),
        thm(
            "or_swap'",
            "(p q : Prop)",
            "p ∨ q → q ∨ p",
            S("intro h", g(f"{PQ}\nh : p ∨ q", "q ∨ p")),
            S("rcases h with hp | hq", gs(g(f"{PQ}\nhp : p", "q ∨ p", "inl"), g(f"{PQ}\nhq : q", "q ∨ p", "inr"))),
            S("right", gs(g(f"{PQ}\nhp : p", "p", "inl"), g(f"{PQ}\nhq : q", "q ∨ p", "inr"))),
            S("exact hp", g(f"{PQ}\nhq : q", "q ∨ p", "inr")),
            S("left", g(f"{PQ}\nhq : q", "q", "inr")),
            S("exact hq"),
        ),
        thm(
            "and_or_distrib_left'",
            "(p q r : Prop)",
            "p ∧ (q ∨ r) ↔ p ∧ q ∨ p ∧ r",
            S("constructor", gs(g(d, "p ∧ (q ∨ r) → p ∧ q ∨ p ∧ r", "mp"), g(d, "p ∧ q ∨ p ∧ r → p ∧ (q ∨ r)", "mpr"))),
            S(
                "intro h",
                gs(g(f"{d}\nh : p ∧ (q ∨ r)", "p ∧ q ∨ p ∧ r", "mp"), g(d, "p ∧ q ∨ p ∧ r → p ∧ (q ∨ r)", "mpr")),
            ),
            S(
                "obtain ⟨hp, hq | hr⟩ := h",
                gs(
                    g(f"{d}\nhp : p\nhq : q", "p ∧ q ∨ p ∧ r", "mp.intro.inl"),
                    g(f"{d}\nhp : p\nhr : r", "p ∧ q ∨ p ∧ r", "mp.intro.inr"),
                    g(d, "p ∧ q ∨ p ∧ r → p ∧ (q ∨ r)", "mpr"),
                ),
            ),
            S(
                "exact Or.inl ⟨hp, hq⟩",
                gs(
                    g(f"{d}\nhp : p\nhr : r", "p ∧ q ∨ p ∧ r", "mp.intro.inr"),
                    g(d, "p ∧ q ∨ p ∧ r → p ∧ (q ∨ r)", "mpr"),
                ),
            ),
            S("exact Or.inr ⟨hp, hr⟩", g(d, "p ∧ q ∨ p ∧ r → p ∧ (q ∨ r)", "mpr")),
            S("intro h", g(f"{d}\nh : p ∧ q ∨ p ∧ r", "p ∧ (q ∨ r)", "mpr")),
            S(
                "rcases h with ⟨hp, hq⟩ | ⟨hp, hr⟩",
                gs(
                    g(f"{d}\nhp : p\nhq : q", "p ∧ (q ∨ r)", "mpr.inl.intro"),
                    g(f"{d}\nhp : p\nhr : r", "p ∧ (q ∨ r)", "mpr.inr.intro"),
                ),
            ),
            S("exact ⟨hp, Or.inl hq⟩", g(f"{d}\nhp : p\nhr : r", "p ∧ (q ∨ r)", "mpr.inr.intro")),
            S("exact ⟨hp, Or.inr hr⟩"),
        ),
        thm(
            "and_self'",
            "(p : Prop)",
            "p ∧ p ↔ p",
            S("constructor", gs(g("p : Prop", "p ∧ p → p", "mp"), g("p : Prop", "p → p ∧ p", "mpr"))),
            S("intro h", gs(g("p : Prop\nh : p ∧ p", "p", "mp"), g("p : Prop", "p → p ∧ p", "mpr"))),
            S("exact h.1", g("p : Prop", "p → p ∧ p", "mpr")),
            S("intro h", g("p : Prop\nh : p", "p ∧ p", "mpr")),
            S("exact ⟨h, h⟩"),
        ),
        thm("or_false'", "(p : Prop)", "p ∨ False ↔ p", S("simp")),
        thm("true_and'", "(p : Prop)", "True ∧ p ↔ p", S("simp")),
        Comment("/-! ## Implication and negation -/"),
        thm(
            "not_not_intro'",
            "(p : Prop)",
            "p → ¬¬p",
            S("intro hp hnp", g("p : Prop\nhp : p\nhnp : ¬p", "False")),
            S("exact hnp hp"),
        ),
        thm(
            "contrapositive",
            "(p q : Prop) (h : p → q)",
            "¬q → ¬p",
            S("intro hnq hp", g(f"{PQ}\nh : p → q\nhnq : ¬q\nhp : p", "False")),
            S("exact hnq (h hp)"),
        ),
        thm(
            "imp_trans'",
            "(p q r : Prop) (hpq : p → q) (hqr : q → r)",
            "p → r",
            S("intro hp", g(f"{PQR}\nhpq : p → q\nhqr : q → r\nhp : p", "r")),
            S("exact hqr (hpq hp)"),
        ),
        thm(
            "and_imp'",
            "(p q r : Prop)",
            "(p ∧ q → r) ↔ (p → q → r)",
            S("constructor", gs(g(d, "(p ∧ q → r) → p → q → r", "mp"), g(d, "(p → q → r) → p ∧ q → r", "mpr"))),
            S(
                "intro h hp hq",
                gs(g(f"{d}\nh : p ∧ q → r\nhp : p\nhq : q", "r", "mp"), g(d, "(p → q → r) → p ∧ q → r", "mpr")),
            ),
            S("exact h ⟨hp, hq⟩", g(d, "(p → q → r) → p ∧ q → r", "mpr")),
            S("intro h hpq", g(f"{d}\nh : p → q → r\nhpq : p ∧ q", "r", "mpr")),
            S("exact h hpq.1 hpq.2"),
            goal="(p ∧ q → r) ↔ p → q → r",
        ),
        thm(
            "not_or_iff'",
            "(p q : Prop)",
            "¬(p ∨ q) ↔ ¬p ∧ ¬q",
            S("constructor", gs(g(PQ, "¬(p ∨ q) → ¬p ∧ ¬q", "mp"), g(PQ, "¬p ∧ ¬q → ¬(p ∨ q)", "mpr"))),
            S("intro h", gs(g(f"{PQ}\nh : ¬(p ∨ q)", "¬p ∧ ¬q", "mp"), g(PQ, "¬p ∧ ¬q → ¬(p ∨ q)", "mpr"))),
            S("exact ⟨fun hp => h (Or.inl hp), fun hq => h (Or.inr hq)⟩", g(PQ, "¬p ∧ ¬q → ¬(p ∨ q)", "mpr")),
            S("intro h hpq", g(f"{PQ}\nh : ¬p ∧ ¬q\nhpq : p ∨ q", "False", "mpr")),
            S(
                "rcases hpq with hp | hq",
                gs(
                    g(f"{PQ}\nh : ¬p ∧ ¬q\nhp : p", "False", "mpr.inl"),
                    g(f"{PQ}\nh : ¬p ∧ ¬q\nhq : q", "False", "mpr.inr"),
                ),
            ),
            S("exact h.1 hp", g(f"{PQ}\nh : ¬p ∧ ¬q\nhq : q", "False", "mpr.inr")),
            S("exact h.2 hq"),
        ),
        thm(
            "iff_comm'",
            "(p q : Prop)",
            "(p ↔ q) ↔ (q ↔ p)",
            S("constructor", gs(g(PQ, "(p ↔ q) → (q ↔ p)", "mp"), g(PQ, "(q ↔ p) → (p ↔ q)", "mpr"))),
            S("intro h", gs(g(f"{PQ}\nh : p ↔ q", "q ↔ p", "mp"), g(PQ, "(q ↔ p) → (p ↔ q)", "mpr"))),
            S("exact h.symm", g(PQ, "(q ↔ p) → (p ↔ q)", "mpr")),
            S("intro h", g(f"{PQ}\nh : q ↔ p", "p ↔ q", "mpr")),
            S("exact h.symm"),
        ),
        Comment("/-! ## Classical reasoning -/"),
        thm(
            "em_imp",
            "(p q : Prop)",
            "(p → q) → ¬p ∨ q",
            S("intro h", g(f"{PQ}\nh : p → q", "¬p ∨ q")),
            S(
                "by_cases hp : p",
                gs(g(f"{PQ}\nh : p → q\nhp : p", "¬p ∨ q", "pos"), g(f"{PQ}\nh : p → q\nhp : ¬p", "¬p ∨ q", "neg")),
            ),
            S("exact Or.inr (h hp)", g(f"{PQ}\nh : p → q\nhp : ¬p", "¬p ∨ q", "neg")),
            S("exact Or.inl hp"),
        ),
        thm(
            "peirce",
            "(p q : Prop)",
            "((p → q) → p) → p",
            S("intro h", g(f"{PQ}\nh : (p → q) → p", "p")),
            S(
                "by_cases hp : p",
                gs(g(f"{PQ}\nh : (p → q) → p\nhp : p", "p", "pos"), g(f"{PQ}\nh : (p → q) → p\nhp : ¬p", "p", "neg")),
            ),
            S("exact hp", g(f"{PQ}\nh : (p → q) → p\nhp : ¬p", "p", "neg")),
            S("exact h (fun hp' => absurd hp' hp)"),
        ),
        thm(
            "not_not_elim",
            "(p : Prop)",
            "¬¬p → p",
            S("intro h", g("p : Prop\nh : ¬¬p", "p")),
            S(
                "by_cases hp : p",
                gs(g("p : Prop\nh : ¬¬p\nhp : p", "p", "pos"), g("p : Prop\nh : ¬¬p\nhp : ¬p", "p", "neg")),
            ),
            S("exact hp", g("p : Prop\nh : ¬¬p\nhp : ¬p", "p", "neg")),
            S("exact absurd hp h"),
        ),
        thm(
            "de_morgan_classical",
            "(p q : Prop)",
            "¬(p ∧ q) → ¬p ∨ ¬q",
            S("intro h", g(f"{PQ}\nh : ¬(p ∧ q)", "¬p ∨ ¬q")),
            S("sorry"),
        ),
        Comment("/-! ## Exclusive or -/"),
        thm(
            "xor_comm'",
            "(p q : Prop)",
            "Xor' p q → Xor' q p",
            S("intro h", g(f"{PQ}\nh : Xor' p q", "Xor' q p")),
            S("unfold Xor' at h ⊢", g(f"{PQ}\nh : p ∧ ¬q ∨ ¬p ∧ q", "q ∧ ¬p ∨ ¬q ∧ p")),
            S(
                "rcases h with ⟨hp, hnq⟩ | ⟨hnp, hq⟩",
                gs(
                    g(f"{PQ}\nhp : p\nhnq : ¬q", "q ∧ ¬p ∨ ¬q ∧ p", "inl.intro"),
                    g(f"{PQ}\nhnp : ¬p\nhq : q", "q ∧ ¬p ∨ ¬q ∧ p", "inr.intro"),
                ),
            ),
            S("exact Or.inr ⟨hnq, hp⟩", g(f"{PQ}\nhnp : ¬p\nhq : q", "q ∧ ¬p ∨ ¬q ∧ p", "inr.intro")),
            S("exact Or.inl ⟨hq, hnp⟩"),
        ),
        thm(
            "xor_self",
            "(p : Prop)",
            "¬Xor' p p",
            S("intro h", g("p : Prop\nh : Xor' p p", "False")),
            S(
                "rcases h with ⟨hp, hnp⟩ | ⟨hnp, hp⟩",
                gs(
                    g("p : Prop\nhp : p\nhnp : ¬p", "False", "inl.intro"),
                    g("p : Prop\nhnp : ¬p\nhp : p", "False", "inr.intro"),
                ),
            ),
            S("exact hnp hp", g("p : Prop\nhnp : ¬p\nhp : p", "False", "inr.intro")),
            S("exact hnp hp"),
        ),
        thm(
            "xor_false",
            "(p : Prop) (h : Xor' p False)",
            "p",
            S("unfold Xor' at h", g("p : Prop\nh : p ∧ ¬False ∨ ¬p ∧ False", "p")),
            S("simp at h", g("p : Prop\nh : p", "p")),
            S("exact h"),
        ),
    )
    return LeanFile(
        f"{NAME}.Props",
        (),
        "# Propositional logic\n\nIntroduction and elimination rules, classical reasoning and exclusive or.",
        NAME,
        items,
    )


def _quantifiers() -> LeanFile:
    a = "α : Type"
    pq = f"{a}\nP Q : α → Prop"
    items = (
        thm(
            "forall_and'",
            "{α : Type} (P Q : α → Prop)",
            "(∀ x, P x ∧ Q x) ↔ (∀ x, P x) ∧ (∀ x, Q x)",
            S(
                "constructor",
                gs(
                    g(pq, "(∀ (x : α), P x ∧ Q x) → (∀ (x : α), P x) ∧ ∀ (x : α), Q x", "mp"),
                    g(pq, "((∀ (x : α), P x) ∧ ∀ (x : α), Q x) → ∀ (x : α), P x ∧ Q x", "mpr"),
                ),
            ),
            S(
                "intro h",
                gs(
                    g(f"{pq}\nh : ∀ (x : α), P x ∧ Q x", "(∀ (x : α), P x) ∧ ∀ (x : α), Q x", "mp"),
                    g(pq, "((∀ (x : α), P x) ∧ ∀ (x : α), Q x) → ∀ (x : α), P x ∧ Q x", "mpr"),
                ),
            ),
            S(
                "exact ⟨fun x => (h x).1, fun x => (h x).2⟩",
                g(pq, "((∀ (x : α), P x) ∧ ∀ (x : α), Q x) → ∀ (x : α), P x ∧ Q x", "mpr"),
            ),
            S("intro h x", g(f"{pq}\nh : (∀ (x : α), P x) ∧ ∀ (x : α), Q x\nx : α", "P x ∧ Q x", "mpr")),
            S("exact ⟨h.1 x, h.2 x⟩"),
            goal="(∀ (x : α), P x ∧ Q x) ↔ (∀ (x : α), P x) ∧ ∀ (x : α), Q x",
        ),
        thm(
            "exists_or'",
            "{α : Type} (P Q : α → Prop)",
            "(∃ x, P x ∨ Q x) → (∃ x, P x) ∨ (∃ x, Q x)",
            S("intro h", g(f"{pq}\nh : ∃ x, P x ∨ Q x", "(∃ x, P x) ∨ ∃ x, Q x")),
            S("obtain ⟨x, hx⟩ := h", g(f"{pq}\nx : α\nhx : P x ∨ Q x", "(∃ x, P x) ∨ ∃ x, Q x", "intro")),
            S(
                "rcases hx with hp | hq",
                gs(
                    g(f"{pq}\nx : α\nhp : P x", "(∃ x, P x) ∨ ∃ x, Q x", "intro.inl"),
                    g(f"{pq}\nx : α\nhq : Q x", "(∃ x, P x) ∨ ∃ x, Q x", "intro.inr"),
                ),
            ),
            S("exact Or.inl ⟨x, hp⟩", g(f"{pq}\nx : α\nhq : Q x", "(∃ x, P x) ∨ ∃ x, Q x", "intro.inr")),
            S("exact Or.inr ⟨x, hq⟩"),
            goal="(∃ x, P x ∨ Q x) → (∃ x, P x) ∨ ∃ x, Q x",
        ),
        thm(
            "not_exists'",
            "{α : Type} (P : α → Prop)",
            "(¬∃ x, P x) ↔ ∀ x, ¬P x",
            S(
                "constructor",
                gs(
                    g(f"{a}\nP : α → Prop", "(¬∃ x, P x) → ∀ (x : α), ¬P x", "mp"),
                    g(f"{a}\nP : α → Prop", "(∀ (x : α), ¬P x) → ¬∃ x, P x", "mpr"),
                ),
            ),
            S(
                "intro h x hx",
                gs(
                    g(f"{a}\nP : α → Prop\nh : ¬∃ x, P x\nx : α\nhx : P x", "False", "mp"),
                    g(f"{a}\nP : α → Prop", "(∀ (x : α), ¬P x) → ¬∃ x, P x", "mpr"),
                ),
            ),
            S("exact h ⟨x, hx⟩", g(f"{a}\nP : α → Prop", "(∀ (x : α), ¬P x) → ¬∃ x, P x", "mpr")),
            S("intro h hex", g(f"{a}\nP : α → Prop\nh : ∀ (x : α), ¬P x\nhex : ∃ x, P x", "False", "mpr")),
            S(
                "obtain ⟨x, hx⟩ := hex",
                g(f"{a}\nP : α → Prop\nh : ∀ (x : α), ¬P x\nx : α\nhx : P x", "False", "mpr.intro"),
            ),
            S("exact h x hx"),
            goal="(¬∃ x, P x) ↔ ∀ (x : α), ¬P x",
        ),
        thm(
            "exists_of_forall",
            "{α : Type} [Inhabited α] (P : α → Prop) (h : ∀ (x : α), P x)",
            "∃ x, P x",
            S("exact ⟨default, h default⟩"),
        ),
        thm(
            "forall_swap'",
            "{α β : Type} (R : α → β → Prop)",
            "(∀ (x : α) (y : β), R x y) → ∀ (y : β) (x : α), R x y",
            S("intro h y x", g("α β : Type\nR : α → β → Prop\nh : ∀ (x : α) (y : β), R x y\ny : β\nx : α", "R x y")),
            S("exact h x y"),
        ),
        thm(
            "exists_comm'",
            "{α β : Type} (R : α → β → Prop)",
            "(∃ x y, R x y) → ∃ y x, R x y",
            S("intro h", g("α β : Type\nR : α → β → Prop\nh : ∃ x y, R x y", "∃ y x, R x y")),
            S(
                "obtain ⟨x, y, hxy⟩ := h",
                g("α β : Type\nR : α → β → Prop\nx : α\ny : β\nhxy : R x y", "∃ y x, R x y", "intro.intro"),
            ),
            S("exact ⟨y, x, hxy⟩"),
        ),
        thm(
            "forall_imp'",
            "{α : Type} (P Q : α → Prop) (h : ∀ (x : α), P x → Q x)",
            "(∀ (x : α), P x) → ∀ (x : α), Q x",
            S("intro hp x", g(f"{pq}\nh : ∀ (x : α), P x → Q x\nhp : ∀ (x : α), P x\nx : α", "Q x")),
            S("exact h x (hp x)"),
        ),
        thm(
            "exists_imp'",
            "{α : Type} (P Q : α → Prop) (h : ∀ (x : α), P x → Q x)",
            "(∃ x, P x) → ∃ x, Q x",
            S("intro hex", g(f"{pq}\nh : ∀ (x : α), P x → Q x\nhex : ∃ x, P x", "∃ x, Q x")),
            S("obtain ⟨x, hx⟩ := hex", g(f"{pq}\nh : ∀ (x : α), P x → Q x\nx : α\nhx : P x", "∃ x, Q x", "intro")),
            S("exact ⟨x, h x hx⟩"),
        ),
        thm(
            "not_forall_of_exists_not",
            "{α : Type} (P : α → Prop)",
            "(∃ x, ¬P x) → ¬∀ (x : α), P x",
            S("intro hex h", g(f"{a}\nP : α → Prop\nhex : ∃ x, ¬P x\nh : ∀ (x : α), P x", "False")),
            S("obtain ⟨x, hx⟩ := hex", g(f"{a}\nP : α → Prop\nh : ∀ (x : α), P x\nx : α\nhx : ¬P x", "False", "intro")),
            S("exact hx (h x)"),
        ),
        thm(
            "not_forall_classical",
            "{α : Type} (P : α → Prop)",
            "(¬∀ (x : α), P x) → ∃ x, ¬P x",
            S("intro h", g(f"{a}\nP : α → Prop\nh : ¬∀ (x : α), P x", "∃ x, ¬P x")),
            S("sorry"),
        ),
        Comment("/-! ## Quantifiers over `Nat` -/"),
        thm("exists_gt", "(n : Nat)", "∃ m, m > n", S("refine ⟨n + 1, ?_⟩", g("n : Nat", "n + 1 > n")), S("omega")),
        thm(
            "forall_exists_double",
            "",
            "∀ (n : Nat), ∃ m, m = n + n",
            S("intro n", g("n : Nat", "∃ m, m = n + n")),
            S("exact ⟨n + n, rfl⟩"),
        ),
        thm(
            "no_largest",
            "",
            "¬∃ n : Nat, ∀ m, m ≤ n",
            S("intro h", g("h : ∃ n, ∀ (m : Nat), m ≤ n", "False")),
            S("obtain ⟨n, hn⟩ := h", g("n : Nat\nhn : ∀ (m : Nat), m ≤ n", "False", "intro")),
            S("have h1 := hn (n + 1)", g("n : Nat\nhn : ∀ (m : Nat), m ≤ n\nh1 : n + 1 ≤ n", "False", "intro")),
            S("omega"),
            goal="¬∃ n, ∀ (m : Nat), m ≤ n",
        ),
        thm(
            "exists_unique_zero",
            "",
            "∃ n : Nat, n + n = n ∧ ∀ m, m + m = m → m = 0",
            S("refine ⟨0, rfl, ?_⟩", g("", "∀ (m : Nat), m + m = m → m = 0")),
            S("intro m hm", g("m : Nat\nhm : m + m = m", "m = 0")),
            S("omega"),
            goal="∃ n, n + n = n ∧ ∀ (m : Nat), m + m = m → m = 0",
        ),
        thm(
            "exists_between",
            "(a b : Nat) (h : a + 1 < b)",
            "∃ c, a < c ∧ c < b",
            S("refine ⟨a + 1, ?_⟩", g("a b : Nat\nh : a + 1 < b", "a < a + 1 ∧ a + 1 < b")),
            S(
                "constructor",
                gs(
                    g("a b : Nat\nh : a + 1 < b", "a < a + 1", "left"),
                    g("a b : Nat\nh : a + 1 < b", "a + 1 < b", "right"),
                ),
            ),
            S("omega", g("a b : Nat\nh : a + 1 < b", "a + 1 < b", "right")),
            S("exact h"),
        ),
    )
    return LeanFile(
        f"{NAME}.Quantifiers",
        (f"{NAME}.Props",),
        "# Quantifiers\n\n`∀` and `∃`, over any type and over `Nat`.",
        NAME,
        items,
    )


def _knights() -> LeanFile:
    items = (
        Decl(
            "inductive",
            "Role",
            "/-- On the island every inhabitant is a knight, who always tells the truth,\n"
            "or a knave, who always lies. -/\ninductive Role where\n  | knight\n  | knave\n"
            "  deriving DecidableEq, Repr",
            constructors=("knight", "knave"),
        ),
        Decl(
            "def",
            "Role.says",
            "/-- What someone of role `r` can say: a knight's statements are true,\n"
            "a knave's are false. -/\ndef Role.says (r : Role) (p : Prop) : Prop := "
            "(r = Role.knight ↔ p)",
        ),
        thm("knight_ne_knave", "", f"{K} ≠ {V}", S("decide")),
        thm("says_knight", "(p : Prop)", f"{K}.says p ↔ p", S("simp [Role.says]")),
        thm("says_knave", "(p : Prop)", f"{V}.says p ↔ ¬p", S("simp [Role.says]")),
        term("says_iff", "(r : Role) (p : Prop)", f"r.says p ↔ (r = {K} ↔ p)", "Iff.rfl"),
        thm(
            "role_cases",
            "(r : Role)",
            f"r = {K} ∨ r = {V}",
            block(
                "cases r with",
                alt("knight", g("", f"{K} = {K} ∨ {K} = {V}", "knight"), S("exact Or.inl rfl")),
                alt("knave", g("", f"{V} = {K} ∨ {V} = {V}", "knave"), S("exact Or.inr rfl")),
            ),
        ),
        thm(
            "not_knight",
            "(r : Role) (h : r ≠ Role.knight)",
            f"r = {V}",
            block(
                "cases r with",
                alt("knight", g(f"h : {K} ≠ {K}", f"{K} = {V}", "knight"), S("exact absurd rfl h")),
                alt("knave", g(f"h : {V} ≠ {K}", f"{V} = {V}", "knave"), S("rfl")),
            ),
        ),
        thm(
            "knave_says_false",
            "(r : Role) (p : Prop) (h : r.says p) (hr : r = Role.knave)",
            "¬p",
            S("subst hr", g(f"p : Prop\nh : {V}.says p", "¬p")),
            S("exact (says_knave p).mp h"),
        ),
        thm(
            "knight_says_true",
            "(r : Role) (p : Prop) (h : r.says p) (hr : r = Role.knight)",
            "p",
            S("subst hr", g(f"p : Prop\nh : {K}.says p", "p")),
            S("exact (says_knight p).mp h"),
        ),
        thm(
            "says_self_knight",
            "(r : Role)",
            f"r.says (r = {K})",
            S("unfold Role.says", g("r : Role", f"r = {K} ↔ r = {K}")),
            S("exact Iff.rfl"),
        ),
        thm(
            "says_not_knave",
            "(r : Role)",
            f"¬r.says (r = {V})",
            S("intro h", g(f"r : Role\nh : r.says (r = {V})", "False")),
            block(
                "cases r with",
                alt("knight", g(f"h : {K}.says ({K} = {V})", "False", "knight"), S("simp [Role.says] at h")),
                alt("knave", g(f"h : {V}.says ({V} = {V})", "False", "knave"), S("simp [Role.says] at h")),
            ),
        ),
        Comment("/-! ## Puzzles\n\nEach puzzle fixes what the islanders say and asks who is who. -/"),
        _puzzle_both_knaves(),
        _puzzle_accuse(),
        _puzzle_same_kind(),
        _puzzle_or(),
        thm(
            "puzzle_three",
            "(a b c : Role) (ha : a.says (b = Role.knave)) (hb : b.says (c = Role.knave)) "
            "(hc : c.says (a = Role.knave ∧ b = Role.knave))",
            f"a = {V} ∧ b = {K} ∧ c = {V}",
            S(
                "unfold Role.says at ha hb hc",
                g(
                    f"a b c : Role\nha : a = {K} ↔ b = {V}\nhb : b = {K} ↔ c = {V}\nhc : c = {K} ↔ a = {V} ∧ b = {V}",
                    f"a = {V} ∧ b = {K} ∧ c = {V}",
                ),
            ),
            S("sorry"),
        ),
    )
    return LeanFile(
        f"{NAME}.Knights",
        (f"{NAME}.Props",),
        "# Knights and knaves\n\nSmullyan's island: knights always tell the truth, knaves always lie.",
        NAME,
        items,
    )


def _puzzle_both_knaves():
    h = "h : {a} = Role.knight ↔ {a} = Role.knave ∧ {b} = Role.knave"
    return thm(
        "puzzle_both_knaves",
        "(a b : Role) (h : a.says (a = Role.knave ∧ b = Role.knave))",
        f"a = {V} ∧ b = {K}",
        S("unfold Role.says at h", g("a b : Role\n" + h.format(a="a", b="b"), f"a = {V} ∧ b = {K}")),
        block(
            "cases a with",
            alt("knight", g("b : Role\n" + h.format(a=K, b="b"), f"{K} = {V} ∧ b = {K}", "knight"), S("simp at h")),
            alt(
                "knave",
                g("b : Role\n" + h.format(a=V, b="b"), f"{V} = {V} ∧ b = {K}", "knave"),
                block(
                    "cases b with",
                    alt(
                        "knight", g(h.format(a=V, b=K), f"{V} = {V} ∧ {K} = {K}", "knave.knight"), S("exact ⟨rfl, rfl⟩")
                    ),
                    alt("knave", g(h.format(a=V, b=V), f"{V} = {V} ∧ {V} = {K}", "knave.knave"), S("simp at h")),
                ),
            ),
        ),
    )


def _puzzle_accuse():
    ha = "ha : {a} = Role.knight ↔ {b} = Role.knave"
    hb = "hb : {b} = Role.knight ↔ {a} = {b}"

    def ctx(a, b, *, first=False):
        return (
            ("a b : Role\n" if first else "b : Role\n" if b == "b" else "")
            + ha.format(a=a, b=b)
            + "\n"
            + hb.format(a=a, b=b)
        )

    def goal(a, b):
        return f"{a} = {K} ∧ {b} = {V}"

    return thm(
        "puzzle_accuse",
        "(a b : Role) (ha : a.says (b = Role.knave)) (hb : b.says (a = b))",
        goal("a", "b"),
        S("unfold Role.says at ha hb", g(ctx("a", "b", first=True), goal("a", "b"))),
        block(
            "cases a with",
            alt(
                "knight",
                g(ctx(K, "b"), goal(K, "b"), "knight"),
                block(
                    "cases b with",
                    alt("knight", g(ctx(K, K), goal(K, K), "knight.knight"), S("simp at ha")),
                    alt("knave", g(ctx(K, V), goal(K, V), "knight.knave"), S("exact ⟨rfl, rfl⟩")),
                ),
            ),
            alt(
                "knave",
                g(ctx(V, "b"), goal(V, "b"), "knave"),
                block(
                    "cases b with",
                    alt("knight", g(ctx(V, K), goal(V, K), "knave.knight"), S("simp at hb")),
                    alt("knave", g(ctx(V, V), goal(V, V), "knave.knave"), S("simp at ha")),
                ),
            ),
        ),
    )


def _puzzle_same_kind():
    h = "h : {a} = Role.knight ↔ {a} = {b}"

    def ctx(a, b):
        return ("b : Role\n" if b == "b" else "") + h.format(a=a, b=b)

    return thm(
        "puzzle_same_kind",
        "(a b : Role) (h : a.says (a = b))",
        f"b = {K}",
        S("unfold Role.says at h", g("a b : Role\n" + h.format(a="a", b="b"), f"b = {K}")),
        block(
            "cases a with",
            alt(
                "knight",
                g(ctx(K, "b"), f"b = {K}", "knight"),
                block(
                    "cases b with",
                    alt("knight", g(ctx(K, K), f"{K} = {K}", "knight.knight"), S("rfl")),
                    alt("knave", g(ctx(K, V), f"{V} = {K}", "knight.knave"), S("simp at h")),
                ),
            ),
            alt(
                "knave",
                g(ctx(V, "b"), f"b = {K}", "knave"),
                block(
                    "cases b with",
                    alt("knight", g(ctx(V, K), f"{K} = {K}", "knave.knight"), S("rfl")),
                    alt("knave", g(ctx(V, V), f"{V} = {K}", "knave.knave"), S("simp at h")),
                ),
            ),
        ),
    )


def _puzzle_or():
    h = "h : {a} = Role.knight ↔ {a} = Role.knave ∨ {b} = Role.knight"

    def ctx(a, b):
        return ("b : Role\n" if b == "b" else "") + h.format(a=a, b=b)

    def goal(a, b):
        return f"{a} = {K} ∧ {b} = {K}"

    return thm(
        "puzzle_or",
        "(a b : Role) (h : a.says (a = Role.knave ∨ b = Role.knight))",
        goal("a", "b"),
        S("unfold Role.says at h", g("a b : Role\n" + h.format(a="a", b="b"), goal("a", "b"))),
        block(
            "cases a with",
            alt(
                "knight",
                g(ctx(K, "b"), goal(K, "b"), "knight"),
                block(
                    "cases b with",
                    alt("knight", g(ctx(K, K), goal(K, K), "knight.knight"), S("exact ⟨rfl, rfl⟩")),
                    alt("knave", g(ctx(K, V), goal(K, V), "knight.knave"), S("simp at h")),
                ),
            ),
            alt("knave", g(ctx(V, "b"), goal(V, "b"), "knave"), S("simp at h")),
        ),
    )


def _arith() -> LeanFile:
    def two(hm: str, hn: str, a: str, b: str, witness: str, eq: str, concl: str):
        """obtain, obtain, refine, omega: the shape of every sum-of-parities proof."""
        c1 = f"m n : Nat\nhn : {hn}\na : Nat\nha : {a}"
        c2 = f"m n a : Nat\nha : {a}\nb : Nat\nhb : {b}"
        return (
            S("obtain ⟨a, ha⟩ := hm", g(c1, concl, "intro")),
            S("obtain ⟨b, hb⟩ := hn", g(c2, concl, "intro.intro")),
            S(f"refine ⟨{witness}, ?_⟩", g(c2, eq, "intro.intro")),
            S("omega"),
        )

    eo = "Even' (n + 1) ∨ Odd' (n + 1)"
    ev_i, od_i = "n k : Nat\nhk : n = k + k", "n k : Nat\nhk : n = k + k + 1"
    items = (
        Decl(
            "def",
            "Even'",
            "/-- `n` is even: `n = k + k` for some `k`. -/\ndef Even' (n : Nat) : Prop := ∃ k, n = k + k",
        ),
        Decl(
            "def",
            "Odd'",
            "/-- `n` is odd: `n = k + k + 1` for some `k`. -/\ndef Odd' (n : Nat) : Prop := ∃ k, n = k + k + 1",
        ),
        term("even_zero", "", "Even' 0", "⟨0, rfl⟩"),
        term("odd_one", "", "Odd' 1", "⟨0, rfl⟩"),
        term("even_double", "(n : Nat)", "Even' (n + n)", "⟨n, rfl⟩"),
        thm(
            "even_mul_two", "(n : Nat)", "Even' (2 * n)", S("refine ⟨n, ?_⟩", g("n : Nat", "2 * n = n + n")), S("omega")
        ),
        Comment("/-! ## Sums -/"),
        thm(
            "even_add",
            "(m n : Nat) (hm : Even' m) (hn : Even' n)",
            "Even' (m + n)",
            *two("Even' m", "Even' n", "m = a + a", "n = b + b", "a + b", "m + n = a + b + (a + b)", "Even' (m + n)"),
        ),
        thm(
            "odd_add_odd",
            "(m n : Nat) (hm : Odd' m) (hn : Odd' n)",
            "Even' (m + n)",
            *two(
                "Odd' m",
                "Odd' n",
                "m = a + a + 1",
                "n = b + b + 1",
                "a + b + 1",
                "m + n = a + b + 1 + (a + b + 1)",
                "Even' (m + n)",
            ),
        ),
        thm(
            "even_add_odd",
            "(m n : Nat) (hm : Even' m) (hn : Odd' n)",
            "Odd' (m + n)",
            *two(
                "Even' m",
                "Odd' n",
                "m = a + a",
                "n = b + b + 1",
                "a + b",
                "m + n = a + b + (a + b) + 1",
                "Odd' (m + n)",
            ),
        ),
        thm(
            "sum_three_odds",
            "(a b c : Nat) (ha : Odd' a) (hb : Odd' b) (hc : Odd' c)",
            "Odd' (a + b + c)",
            S(
                "have hab := odd_add_odd a b ha hb",
                g("a b c : Nat\nha : Odd' a\nhb : Odd' b\nhc : Odd' c\nhab : Even' (a + b)", "Odd' (a + b + c)"),
            ),
            S("exact even_add_odd (a + b) c hab hc"),
        ),
        Comment("/-! ## Successors -/"),
        thm(
            "odd_succ_of_even",
            "(n : Nat) (h : Even' n)",
            "Odd' (n + 1)",
            S("obtain ⟨k, hk⟩ := h", g(ev_i, "Odd' (n + 1)", "intro")),
            S("refine ⟨k, ?_⟩", g(ev_i, "n + 1 = k + k + 1", "intro")),
            S("omega"),
        ),
        thm(
            "even_succ_of_odd",
            "(n : Nat) (h : Odd' n)",
            "Even' (n + 1)",
            S("obtain ⟨k, hk⟩ := h", g(od_i, "Even' (n + 1)", "intro")),
            S("refine ⟨k + 1, ?_⟩", g(od_i, "n + 1 = k + 1 + (k + 1)", "intro")),
            S("omega"),
        ),
        thm(
            "even_or_odd",
            "(n : Nat)",
            "Even' n ∨ Odd' n",
            block(
                "induction n with",
                alt("zero", g("", "Even' 0 ∨ Odd' 0", "zero"), S("exact Or.inl ⟨0, rfl⟩")),
                alt(
                    "succ n ih",
                    g("n : Nat\nih : Even' n ∨ Odd' n", eo, "succ"),
                    S(
                        "rcases ih with ⟨k, hk⟩ | ⟨k, hk⟩",
                        gs(g(ev_i, eo, "succ.inl.intro"), g(od_i, eo, "succ.inr.intro")),
                    ),
                    S(
                        "refine Or.inr ⟨k, ?_⟩",
                        gs(g(ev_i, "n + 1 = k + k + 1", "succ.inl.intro"), g(od_i, eo, "succ.inr.intro")),
                    ),
                    S("omega", g(od_i, eo, "succ.inr.intro")),
                    S("refine Or.inl ⟨k + 1, ?_⟩", g(od_i, "n + 1 = k + 1 + (k + 1)", "succ.inr.intro")),
                    S("omega"),
                ),
            ),
        ),
        thm(
            "even_or_even_succ",
            "(n : Nat)",
            "Even' n ∨ Even' (n + 1)",
            S(
                "rcases even_or_odd n with h | h",
                gs(
                    g("n : Nat\nh : Even' n", "Even' n ∨ Even' (n + 1)", "inl"),
                    g("n : Nat\nh : Odd' n", "Even' n ∨ Even' (n + 1)", "inr"),
                ),
            ),
            S("exact Or.inl h", g("n : Nat\nh : Odd' n", "Even' n ∨ Even' (n + 1)", "inr")),
            S("exact Or.inr (even_succ_of_odd n h)"),
        ),
        Comment("/-! ## Exclusivity -/"),
        thm(
            "not_even_and_odd",
            "(n : Nat)",
            "¬(Even' n ∧ Odd' n)",
            S("intro h", g("n : Nat\nh : Even' n ∧ Odd' n", "False")),
            S(
                "obtain ⟨⟨a, ha⟩, ⟨b, hb⟩⟩ := h",
                g("n a : Nat\nha : n = a + a\nb : Nat\nhb : n = b + b + 1", "False", "intro.intro.intro"),
            ),
            S("omega"),
        ),
        thm(
            "not_odd_zero",
            "",
            "¬Odd' 0",
            S("intro h", g("h : Odd' 0", "False")),
            S("obtain ⟨k, hk⟩ := h", g("k : Nat\nhk : 0 = k + k + 1", "False", "intro")),
            S("omega"),
        ),
        thm(
            "not_even_both",
            "(n : Nat) (h₁ : Even' n) (h₂ : Even' (n + 1))",
            "False",
            S("obtain ⟨a, ha⟩ := h₁", g("n : Nat\nh₂ : Even' (n + 1)\na : Nat\nha : n = a + a", "False", "intro")),
            S(
                "obtain ⟨b, hb⟩ := h₂",
                g("n a : Nat\nha : n = a + a\nb : Nat\nhb : n + 1 = b + b", "False", "intro.intro"),
            ),
            S("omega"),
        ),
        Comment("/-! ## Parity and `%` -/"),
        _mod_iff("even_iff_mod", "Even' n", "n % 2 = 0", "n = k + k", "n = n / 2 + n / 2"),
        _mod_iff("odd_iff_mod", "Odd' n", "n % 2 = 1", "n = k + k + 1", "n = n / 2 + n / 2 + 1"),
        Comment("/-! ## Products (open) -/"),
        thm(
            "even_mul",
            "(m n : Nat) (hm : Even' m)",
            "Even' (m * n)",
            S("obtain ⟨k, hk⟩ := hm", g("m n k : Nat\nhk : m = k + k", "Even' (m * n)", "intro")),
            S("refine ⟨k * n, ?_⟩", g("m n k : Nat\nhk : m = k + k", "m * n = k * n + k * n", "intro")),
            S("sorry"),
        ),
        thm("odd_mul_odd", "(m n : Nat) (hm : Odd' m) (hn : Odd' n)", "Odd' (m * n)", S("sorry")),
    )
    return LeanFile(
        f"{NAME}.Arith",
        (f"{NAME}.Quantifiers",),
        "# Parity puzzles\n\nEven and odd numbers as existential statements.",
        NAME,
        items,
    )


def _mod_iff(name: str, pred: str, mod: str, witness_eq: str, half_eq: str):
    n = "n : Nat"
    mp_goal, mpr_goal = f"{pred} → {mod}", f"{mod} → {pred}"
    return thm(
        name,
        "(n : Nat)",
        f"{pred} ↔ {mod}",
        S("constructor", gs(g(n, mp_goal, "mp"), g(n, mpr_goal, "mpr"))),
        S("intro h", gs(g(f"{n}\nh : {pred}", mod, "mp"), g(n, mpr_goal, "mpr"))),
        S("obtain ⟨k, hk⟩ := h", gs(g(f"n k : Nat\nhk : {witness_eq}", mod, "mp.intro"), g(n, mpr_goal, "mpr"))),
        S("omega", g(n, mpr_goal, "mpr")),
        S("intro h", g(f"{n}\nh : {mod}", pred, "mpr")),
        S("refine ⟨n / 2, ?_⟩", g(f"{n}\nh : {mod}", half_eq, "mpr")),
        S("omega"),
    )


def repo() -> LeanRepo:
    files = (_props(), _quantifiers(), _knights(), _arith())
    root = LeanFile(NAME, tuple(f.module for f in files), "", None, ())
    return LeanRepo(NAME, "Hard: logic and puzzles, proofs of four to nine steps with several goals.", files + (root,))
