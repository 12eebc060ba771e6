"""NatBasics: the easy sample repository. Arithmetic on `Nat` with a few definitions
(`double`, `triple`, `square`, `sumTo`, a `Parity` type); most proofs take one or two
tactics (`simp`, `omega`, `rw`, `unfold`), a few use induction, two are left as `sorry`.
"""

from __future__ import annotations

from storage.sample.lean_model import Comment, Decl, LeanFile, LeanRepo, S, alt, block, g, gs, term, thm

NAME = "NatBasics"
N = "n : Nat"
NM = "n m : Nat"


def _defs() -> LeanFile:
    items = (
        Decl("def", "double", "/-- Twice a number, by addition. -/\ndef double (n : Nat) : Nat := n + n"),
        Decl("def", "triple", "/-- Three times a number, by addition. -/\ndef triple (n : Nat) : Nat := n + n + n"),
        Decl("def", "square", "/-- The square of a number. -/\ndef square (n : Nat) : Nat := n * n"),
        Decl("abbrev", "Pos", "/-- `n` is positive. -/\nabbrev Pos (n : Nat) : Prop := 0 < n"),
        Decl(
            "def",
            "isEven",
            "/-- `n` is even when it is twice some number. -/\ndef isEven (n : Nat) : Prop := ∃ k, n = 2 * k",
        ),
        Decl(
            "def",
            "sumTo",
            "/-- The sum `0 + 1 + ⋯ + n`. -/\ndef sumTo : Nat → Nat\n  | 0 => 0\n  | n + 1 => sumTo n + (n + 1)",
        ),
        Decl(
            "inductive",
            "Parity",
            "/-- The parity of a number, as data. -/\ninductive Parity where\n  | even\n  | odd\n"
            "  deriving Repr, DecidableEq",
            constructors=("even", "odd"),
        ),
        Decl(
            "def",
            "Parity.flip",
            "/-- Swap even and odd. -/\ndef Parity.flip : Parity → Parity\n  | .even => .odd\n  | .odd => .even",
        ),
        Decl(
            "def",
            "parity",
            "/-- The parity of `n`. -/\ndef parity (n : Nat) : Parity := if n % 2 = 0 then .even else .odd",
        ),
        Decl("instance", "instInhabitedParity", "instance instInhabitedParity : Inhabited Parity := ⟨.even⟩"),
        Comment("/-! ## Unfolding lemmas -/"),
        term("double_def", "(n : Nat)", "double n = n + n", "rfl"),
        term("triple_def", "(n : Nat)", "triple n = n + n + n", "rfl"),
        term("square_def", "(n : Nat)", "square n = n * n", "rfl"),
        term("sumTo_zero", "", "sumTo 0 = 0", "rfl"),
        term("sumTo_succ", "(n : Nat)", "sumTo (n + 1) = sumTo n + (n + 1)", "rfl"),
        term("default_parity", "", "(default : Parity) = Parity.even", "rfl"),
        Comment("/-! ## Parity -/"),
        thm(
            "flip_flip",
            "(p : Parity)",
            "p.flip.flip = p",
            block(
                "cases p with",
                alt("even", g("", "Parity.even.flip.flip = Parity.even", "even"), S("rfl")),
                alt("odd", g("", "Parity.odd.flip.flip = Parity.odd", "odd"), S("rfl")),
            ),
        ),
        thm(
            "flip_ne",
            "(p : Parity)",
            "p.flip ≠ p",
            block(
                "cases p with",
                alt("even", g("", "Parity.even.flip ≠ Parity.even", "even"), S("decide")),
                alt("odd", g("", "Parity.odd.flip ≠ Parity.odd", "odd"), S("decide")),
            ),
        ),
        thm("parity_zero", "", "parity 0 = Parity.even", S("decide")),
        thm("parity_one", "", "parity 1 = Parity.odd", S("decide")),
        thm("parity_two", "", "parity 2 = Parity.even", S("decide")),
    )
    return LeanFile(
        f"{NAME}.Defs", (), "# Definitions\n\nThe functions and predicates the other files reason about.", NAME, items
    )


def _add() -> LeanFile:
    items = (
        thm("add_zero'", "(n : Nat)", "n + 0 = n", S("simp")),
        thm("zero_add'", "(n : Nat)", "0 + n = n", S("simp")),
        thm("add_comm'", "(n m : Nat)", "n + m = m + n", S("rw [Nat.add_comm]")),
        thm("add_assoc'", "(a b c : Nat)", "a + b + c = a + (b + c)", S("rw [Nat.add_assoc]")),
        thm("add_left_comm'", "(a b c : Nat)", "a + (b + c) = b + (a + c)", S("rw [Nat.add_left_comm]")),
        thm("add_right_comm'", "(a b c : Nat)", "a + b + c = a + c + b", S("rw [Nat.add_right_comm]")),
        thm("add_succ'", "(n m : Nat)", "n + (m + 1) = n + m + 1", S("rw [← Nat.add_assoc]")),
        thm("succ_add'", "(n m : Nat)", "n + 1 + m = n + m + 1", S("omega")),
        thm("add_one_ne_zero'", "(n : Nat)", "n + 1 ≠ 0", S("omega")),
        thm("add_eq_zero_left", "(n m : Nat) (h : n + m = 0)", "n = 0", S("omega")),
        thm("add_right_cancel'", "(a b c : Nat) (h : a + c = b + c)", "a = b", S("omega")),
        thm("add_left_cancel'", "(a b c : Nat) (h : c + a = c + b)", "a = b", S("omega")),
        thm("add_comm_three", "(a b c : Nat)", "a + b + c = c + b + a", S("omega")),
        Comment("/-! ## `double` and `triple` -/"),
        term("double_zero", "", "double 0 = 0", "rfl"),
        thm("double_one", "", "double 1 = 2", S("decide")),
        term("add_self_eq_double", "(n : Nat)", "n + n = double n", "rfl"),
        thm(
            "double_add",
            "(n m : Nat)",
            "double (n + m) = double n + double m",
            S("unfold double", g(NM, "n + m + (n + m) = n + n + (m + m)")),
            S("omega"),
        ),
        thm(
            "double_eq_two_mul", "(n : Nat)", "double n = 2 * n", S("unfold double", g(N, "n + n = 2 * n")), S("omega")
        ),
        thm(
            "triple_eq_three_mul",
            "(n : Nat)",
            "triple n = 3 * n",
            S("unfold triple", g(N, "n + n + n = 3 * n")),
            S("omega"),
        ),
        thm("double_add_double", "(n m : Nat)", "double n + double m = double (n + m)", S("rw [double_add]")),
        thm(
            "triple_add",
            "(n m : Nat)",
            "triple (n + m) = triple n + triple m",
            S("unfold triple", g(NM, "n + m + (n + m) + (n + m) = n + n + n + (m + m + m)")),
            S("omega"),
        ),
        thm(
            "double_le_triple",
            "(n : Nat)",
            "double n ≤ triple n",
            S("unfold double triple", g(N, "n + n ≤ n + n + n")),
            S("omega"),
        ),
        thm(
            "double_add_one_ne",
            "(n m : Nat)",
            "double n ≠ double m + 1",
            S("unfold double", g(NM, "n + n ≠ m + m + 1")),
            S("omega"),
        ),
        thm(
            "double_triple",
            "(n : Nat)",
            "double (triple n) = triple (double n)",
            S("unfold double triple", g(N, "n + n + n + (n + n + n) = n + n + (n + n) + (n + n)")),
            S("omega"),
        ),
        thm(
            "double_pos",
            "(n : Nat) (h : 0 < n)",
            "0 < double n",
            S("unfold double", g("n : Nat\nh : 0 < n", "0 < n + n")),
            S("omega"),
        ),
        Comment("/-! ## Even numbers and positivity -/"),
        term("isEven_zero", "", "isEven 0", "⟨0, rfl⟩"),
        thm(
            "isEven_double",
            "(n : Nat)",
            "isEven (double n)",
            S("refine ⟨n, ?_⟩", g(N, "double n = 2 * n")),
            S("rw [double_eq_two_mul]"),
        ),
        thm(
            "isEven_add",
            "(m n : Nat) (hm : isEven m) (hn : isEven n)",
            "isEven (m + n)",
            S(
                "obtain ⟨a, ha⟩ := hm",
                g("m n : Nat\nhn : isEven n\na : Nat\nha : m = 2 * a", "isEven (m + n)", "intro"),
            ),
            S(
                "obtain ⟨b, hb⟩ := hn",
                g("m n a : Nat\nha : m = 2 * a\nb : Nat\nhb : n = 2 * b", "isEven (m + n)", "intro.intro"),
            ),
            S(
                "refine ⟨a + b, ?_⟩",
                g("m n a : Nat\nha : m = 2 * a\nb : Nat\nhb : n = 2 * b", "m + n = 2 * (a + b)", "intro.intro"),
            ),
            S("omega"),
        ),
        thm(
            "pos_add",
            "(n m : Nat) (h : Pos n)",
            "Pos (n + m)",
            S("unfold Pos at h ⊢", g("n m : Nat\nh : 0 < n", "0 < n + m")),
            S("omega"),
        ),
        Comment("/-! ## Sums -/"),
        thm("sumTo_one", "", "sumTo 1 = 1", S("decide")),
        thm("sumTo_two", "", "sumTo 2 = 3", S("decide")),
        thm(
            "sumTo_pos",
            "(n : Nat) (h : 0 < n)",
            "0 < sumTo n",
            block(
                "cases n with",
                alt("zero", g("h : 0 < 0", "0 < sumTo 0", "zero"), S("exact absurd h (Nat.lt_irrefl 0)")),
                alt(
                    "succ n",
                    g("n : Nat\nh : 0 < n + 1", "0 < sumTo (n + 1)", "succ"),
                    S("rw [sumTo_succ]", g("n : Nat\nh : 0 < n + 1", "0 < sumTo n + (n + 1)", "succ")),
                    S("omega"),
                ),
            ),
        ),
        thm(
            "le_sumTo",
            "(n : Nat)",
            "n ≤ sumTo n",
            block(
                "induction n with",
                alt("zero", g("", "0 ≤ sumTo 0", "zero"), S("exact Nat.zero_le _")),
                alt(
                    "succ n ih",
                    g("n : Nat\nih : n ≤ sumTo n", "n + 1 ≤ sumTo (n + 1)", "succ"),
                    S("rw [sumTo_succ]", g("n : Nat\nih : n ≤ sumTo n", "n + 1 ≤ sumTo n + (n + 1)", "succ")),
                    S("omega"),
                ),
            ),
        ),
        thm("sumTo_formula", "(n : Nat)", "2 * sumTo n = n * (n + 1)", S("sorry")),
    )
    return LeanFile(
        f"{NAME}.Add", (f"{NAME}.Defs",), "# Addition\n\nAddition, `double`, `triple` and `sumTo`.", NAME, items
    )


def _mul() -> LeanFile:
    items = (
        thm("mul_one'", "(n : Nat)", "n * 1 = n", S("simp")),
        thm("one_mul'", "(n : Nat)", "1 * n = n", S("simp")),
        thm("mul_zero'", "(n : Nat)", "n * 0 = 0", S("simp")),
        thm("zero_mul'", "(n : Nat)", "0 * n = 0", S("simp")),
        thm("mul_comm'", "(n m : Nat)", "n * m = m * n", S("rw [Nat.mul_comm]")),
        thm("mul_assoc'", "(a b c : Nat)", "a * b * c = a * (b * c)", S("rw [Nat.mul_assoc]")),
        thm("mul_add'", "(a b c : Nat)", "a * (b + c) = a * b + a * c", S("rw [Nat.mul_add]")),
        thm("add_mul'", "(a b c : Nat)", "(a + b) * c = a * c + b * c", S("rw [Nat.add_mul]")),
        thm("mul_le_mul_left'", "(a b c : Nat) (h : a ≤ b)", "c * a ≤ c * b", S("exact Nat.mul_le_mul_left c h")),
        Comment("/-! ## `double` as a product -/"),
        thm("two_mul_eq_double", "(n : Nat)", "2 * n = double n", S("rw [double_eq_two_mul]")),
        thm(
            "mul_two'",
            "(n : Nat)",
            "n * 2 = double n",
            S("rw [double_eq_two_mul]", g(N, "n * 2 = 2 * n")),
            S("rw [Nat.mul_comm]"),
        ),
        thm(
            "double_mul",
            "(n m : Nat)",
            "double (n * m) = double n * m",
            S("rw [double_eq_two_mul, double_eq_two_mul, Nat.mul_assoc]"),
        ),
        thm(
            "double_double",
            "(n : Nat)",
            "double (double n) = 4 * n",
            S("rw [double_eq_two_mul, double_eq_two_mul]", g(N, "2 * (2 * n) = 4 * n")),
            S("omega"),
        ),
        thm(
            "triple_eq_mul_three",
            "(n : Nat)",
            "triple n = n * 3",
            S("unfold triple", g(N, "n + n + n = n * 3")),
            S("omega"),
        ),
        Comment("/-! ## Squares -/"),
        term("square_zero", "", "square 0 = 0", "rfl"),
        thm("square_one", "", "square 1 = 1", S("decide")),
        thm("square_two", "", "square 2 = 4", S("decide")),
        term("mul_self_eq_square", "(n : Nat)", "n * n = square n", "rfl"),
        thm("double_square", "(n : Nat)", "double (square n) = 2 * square n", S("rw [double_eq_two_mul]")),
        thm(
            "square_mul",
            "(n m : Nat)",
            "square (n * m) = square n * square m",
            S("unfold square", g(NM, "n * m * (n * m) = n * n * (m * m)")),
            S("simp only [Nat.mul_assoc, Nat.mul_comm, Nat.mul_left_comm]"),
        ),
        thm(
            "square_add",
            "(a b : Nat)",
            "square (a + b) = square a + 2 * a * b + square b",
            S("unfold square", g("a b : Nat", "(a + b) * (a + b) = a * a + 2 * a * b + b * b")),
            S("sorry"),
        ),
    )
    return LeanFile(
        f"{NAME}.Mul", (f"{NAME}.Add",), "# Multiplication\n\nProducts, `double` as `2 * n`, squares.", NAME, items
    )


def _order() -> LeanFile:
    iff_ctx = NM
    items = (
        thm("le_refl'", "(n : Nat)", "n ≤ n", S("exact Nat.le_refl n")),
        thm("le_succ'", "(n : Nat)", "n ≤ n + 1", S("omega")),
        thm("le_trans'", "(a b c : Nat) (h₁ : a ≤ b) (h₂ : b ≤ c)", "a ≤ c", S("exact Nat.le_trans h₁ h₂")),
        thm("lt_irrefl'", "(n : Nat)", "¬n < n", S("omega")),
        thm("le_add_right'", "(n m : Nat)", "n ≤ n + m", S("exact Nat.le_add_right n m")),
        thm("lt_of_lt_of_le'", "(a b c : Nat) (h₁ : a < b) (h₂ : b ≤ c)", "a < c", S("omega")),
        thm("le_antisymm'", "(a b : Nat) (h₁ : a ≤ b) (h₂ : b ≤ a)", "a = b", S("exact Nat.le_antisymm h₁ h₂")),
        thm("pos_of_ne_zero'", "(n : Nat) (h : n ≠ 0)", "0 < n", S("omega")),
        thm("succ_le_of_lt'", "(n m : Nat) (h : n < m)", "n + 1 ≤ m", S("exact h")),
        thm(
            "lt_succ_iff'",
            "(n m : Nat)",
            "n < m + 1 ↔ n ≤ m",
            S("constructor", gs(g(iff_ctx, "n < m + 1 → n ≤ m", "mp"), g(iff_ctx, "n ≤ m → n < m + 1", "mpr"))),
            S("intro h", gs(g(iff_ctx + "\nh : n < m + 1", "n ≤ m", "mp"), g(iff_ctx, "n ≤ m → n < m + 1", "mpr"))),
            S("omega", g(iff_ctx, "n ≤ m → n < m + 1", "mpr")),
            S("intro h", g(iff_ctx + "\nh : n ≤ m", "n < m + 1", "mpr")),
            S("omega"),
        ),
        thm("max_self'", "(n : Nat)", "max n n = n", S("omega")),
        thm("min_le_left'", "(a b : Nat)", "min a b ≤ a", S("omega")),
        thm("le_max_left'", "(a b : Nat)", "a ≤ max a b", S("omega")),
        thm("sub_self'", "(n : Nat)", "n - n = 0", S("simp")),
        thm("sub_le'", "(n m : Nat)", "n - m ≤ n", S("exact Nat.sub_le n m")),
        thm("add_sub_cancel'", "(n m : Nat)", "n + m - m = n", S("omega")),
        Comment("/-! ## Monotonicity of `double` and `triple` -/"),
        thm("le_double", "(n : Nat)", "n ≤ double n", S("unfold double", g(N, "n ≤ n + n")), S("omega")),
        thm(
            "lt_double",
            "(n : Nat) (h : 0 < n)",
            "n < double n",
            S("unfold double", g("n : Nat\nh : 0 < n", "n < n + n")),
            S("omega"),
        ),
        thm(
            "double_mono",
            "(n m : Nat) (h : n ≤ m)",
            "double n ≤ double m",
            S("unfold double", g("n m : Nat\nh : n ≤ m", "n + n ≤ m + m")),
            S("omega"),
        ),
        thm(
            "double_lt_double",
            "(n m : Nat) (h : n < m)",
            "double n < double m",
            S("unfold double", g("n m : Nat\nh : n < m", "n + n < m + m")),
            S("omega"),
        ),
        thm(
            "le_of_double_le",
            "(n m : Nat) (h : double n ≤ double m)",
            "n ≤ m",
            S("unfold double at h", g("n m : Nat\nh : n + n ≤ m + m", "n ≤ m")),
            S("omega"),
        ),
        thm(
            "triple_mono",
            "(n m : Nat) (h : n ≤ m)",
            "triple n ≤ triple m",
            S("unfold triple", g("n m : Nat\nh : n ≤ m", "n + n + n ≤ m + m + m")),
            S("omega"),
        ),
        thm(
            "pos_double",
            "(n : Nat) (h : Pos n)",
            "Pos (double n)",
            S("unfold Pos at h ⊢", g("n : Nat\nh : 0 < n", "0 < double n")),
            S("exact double_pos n h"),
        ),
    )
    return LeanFile(
        f"{NAME}.Order", (f"{NAME}.Add",), "# Order\n\n`≤`, `<`, `min`, `max` and monotonicity.", NAME, items
    )


def repo() -> LeanRepo:
    files = (_defs(), _add(), _mul(), _order())
    root = LeanFile(NAME, tuple(f.module for f in files), "", None, ())
    return LeanRepo(NAME, "Easy: arithmetic on Nat, mostly one- and two-step proofs.", files + (root,))
