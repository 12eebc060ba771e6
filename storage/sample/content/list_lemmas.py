"""ListLemmas: the medium sample repository. Lists with hand-written `sum`, `snoc`,
`rev`, `countP`, an `All` predicate and a `Pair` structure; most proofs are by
induction (`induction xs with | nil => ... | cons x xs ih => ...`) and take three to
six traced tactics; a few are left as `sorry`.
"""

from __future__ import annotations

from storage.sample.lean_model import Comment, Decl, LeanFile, LeanRepo, S, alt, block, g, gs, term, thm

NAME = "ListLemmas"
A = "α : Type"


def _nil_cons(
    ctx_nil: str,
    goal_nil: str,
    ctx_cons: str,
    goal_cons: str,
    nil_steps,
    cons_steps,
    header: str = "induction xs with",
    cons: str = "cons x xs ih",
):
    """The usual list induction block."""
    return block(
        header,
        alt("nil", g(ctx_nil, goal_nil, "nil"), *nil_steps),
        alt(cons, g(ctx_cons, goal_cons, "cons"), *cons_steps),
    )


def _basic() -> LeanFile:
    cnt_ctx = f"{A}\np : α → Bool\nx : α\nxs : List α\nih : countP p xs ≤ xs.length"
    cnt_app = (
        f"{A}\np : α → Bool\nys : List α\nx : α\nxs : List α\nih : countP p (xs ++ ys) = countP p xs + countP p ys"
    )
    all_cons = (
        f"{A}\nP : α → Prop\nys : List α\nh₂ : All P ys\nx✝ : α\nxs✝ : List α\nhx : P x✝\n"
        "a✝ : All P xs✝\nih : All P (xs✝ ++ ys)"
    )
    items = (
        Decl(
            "def",
            "sum",
            "/-- The sum of a list of numbers. -/\ndef sum : List Nat → Nat\n  | [] => 0\n  | x :: xs => x + sum xs",
        ),
        Decl(
            "def",
            "snoc",
            "/-- Append one element at the end. -/\ndef snoc {α : Type} : List α → α → List α\n"
            "  | [], a => [a]\n  | x :: xs, a => x :: snoc xs a",
        ),
        Decl(
            "def",
            "rev",
            "/-- List reversal, the slow way: by `snoc`. -/\ndef rev {α : Type} : List α → List α\n"
            "  | [] => []\n  | x :: xs => snoc (rev xs) x",
        ),
        Decl(
            "def",
            "countP",
            "/-- How many elements satisfy `p`. -/\n"
            "def countP {α : Type} (p : α → Bool) : List α → Nat\n  | [] => 0\n"
            "  | x :: xs => (if p x then 1 else 0) + countP p xs",
        ),
        Decl(
            "inductive",
            "All",
            "/-- Every element of the list satisfies `P`. -/\n"
            "inductive All {α : Type} (P : α → Prop) : List α → Prop where\n"
            "  | nil : All P []\n"
            "  | cons {x : α} {xs : List α} : P x → All P xs → All P (x :: xs)",
            constructors=("nil", "cons"),
        ),
        Decl(
            "structure",
            "Pair",
            "/-- Two values of one type. -/\nstructure Pair (α : Type) where\n  fst : α\n  snd : α\n  deriving Repr",
            constructors=("mk",),
        ),
        Decl(
            "def",
            "Pair.swap",
            "/-- Exchange the two components. -/\ndef Pair.swap {α : Type} (p : Pair α) : Pair α := ⟨p.snd, p.fst⟩",
        ),
        Decl(
            "instance",
            "instInhabitedPair",
            "instance instInhabitedPair {α : Type} [Inhabited α] : Inhabited (Pair α) := ⟨⟨default, default⟩⟩",
        ),
        Comment("/-! ## Equations -/"),
        term("sum_nil", "", "sum [] = 0", "rfl", attrs="@[simp]"),
        term("sum_cons", "(x : Nat) (xs : List Nat)", "sum (x :: xs) = x + sum xs", "rfl", attrs="@[simp]"),
        term("snoc_nil", "{α : Type} (a : α)", "snoc [] a = [a]", "rfl"),
        term("snoc_cons", "{α : Type} (x a : α) (xs : List α)", "snoc (x :: xs) a = x :: snoc xs a", "rfl"),
        term("countP_nil", "{α : Type} (p : α → Bool)", "countP p [] = 0", "rfl"),
        Comment("/-! ## `sum` and `snoc` -/"),
        thm("sum_singleton", "(x : Nat)", "sum [x] = x", S("simp [sum]")),
        thm(
            "sum_append",
            "(xs ys : List Nat)",
            "sum (xs ++ ys) = sum xs + sum ys",
            _nil_cons(
                "ys : List Nat",
                "sum ([] ++ ys) = sum [] + sum ys",
                "ys : List Nat\nx : Nat\nxs : List Nat\nih : sum (xs ++ ys) = sum xs + sum ys",
                "sum (x :: xs ++ ys) = sum (x :: xs) + sum ys",
                [S("simp [sum]")],
                [
                    S(
                        "simp only [List.cons_append, sum]",
                        g(
                            "ys : List Nat\nx : Nat\nxs : List Nat\nih : sum (xs ++ ys) = sum xs + sum ys",
                            "x + sum (xs ++ ys) = x + sum xs + sum ys",
                            "cons",
                        ),
                    ),
                    S("omega"),
                ],
            ),
        ),
        thm(
            "length_snoc",
            "{α : Type} (xs : List α) (a : α)",
            "(snoc xs a).length = xs.length + 1",
            _nil_cons(
                f"{A}\na : α",
                "(snoc [] a).length = [].length + 1",
                f"{A}\na x : α\nxs : List α\nih : (snoc xs a).length = xs.length + 1",
                "(snoc (x :: xs) a).length = (x :: xs).length + 1",
                [S("rfl")],
                [S("simp [snoc, ih]")],
            ),
        ),
        thm(
            "snoc_append",
            "{α : Type} (xs : List α) (a : α)",
            "snoc xs a = xs ++ [a]",
            _nil_cons(
                f"{A}\na : α",
                "snoc [] a = [] ++ [a]",
                f"{A}\na x : α\nxs : List α\nih : snoc xs a = xs ++ [a]",
                "snoc (x :: xs) a = x :: xs ++ [a]",
                [S("rfl")],
                [S("simp [snoc, ih]")],
            ),
        ),
        thm(
            "sum_snoc",
            "(xs : List Nat) (a : Nat)",
            "sum (snoc xs a) = sum xs + a",
            S("rw [snoc_append, sum_append]", g("xs : List Nat\na : Nat", "sum xs + sum [a] = sum xs + a")),
            S("rw [sum_singleton]"),
        ),
        Comment("/-! ## `countP` -/"),
        thm(
            "countP_le_length",
            "{α : Type} (p : α → Bool) (xs : List α)",
            "countP p xs ≤ xs.length",
            _nil_cons(
                f"{A}\np : α → Bool",
                "countP p [] ≤ [].length",
                cnt_ctx,
                "countP p (x :: xs) ≤ (x :: xs).length",
                [S("simp [countP]")],
                [
                    S(
                        "simp only [countP, List.length_cons]",
                        g(cnt_ctx, "(if p x = true then 1 else 0) + countP p xs ≤ xs.length + 1", "cons"),
                    ),
                    S(
                        "split",
                        gs(
                            g(cnt_ctx + "\nh✝ : p x = true", "1 + countP p xs ≤ xs.length + 1", "isTrue"),
                            g(cnt_ctx + "\nh✝ : ¬p x = true", "0 + countP p xs ≤ xs.length + 1", "isFalse"),
                        ),
                    ),
                    S("omega", g(cnt_ctx + "\nh✝ : ¬p x = true", "0 + countP p xs ≤ xs.length + 1", "isFalse")),
                    S("omega"),
                ],
            ),
        ),
        thm(
            "countP_append",
            "{α : Type} (p : α → Bool) (xs ys : List α)",
            "countP p (xs ++ ys) = countP p xs + countP p ys",
            _nil_cons(
                f"{A}\np : α → Bool\nys : List α",
                "countP p ([] ++ ys) = countP p [] + countP p ys",
                cnt_app,
                "countP p (x :: xs ++ ys) = countP p (x :: xs) + countP p ys",
                [S("simp [countP]")],
                [
                    S(
                        "simp only [List.cons_append, countP, ih]",
                        g(
                            cnt_app,
                            "(if p x = true then 1 else 0) + (countP p xs + countP p ys) = "
                            "(if p x = true then 1 else 0) + countP p xs + countP p ys",
                            "cons",
                        ),
                    ),
                    S("omega"),
                ],
            ),
        ),
        Comment("/-! ## `All` -/"),
        term("all_nil", "{α : Type} (P : α → Prop)", "All P []", "All.nil"),
        thm(
            "all_append",
            "{α : Type} {P : α → Prop} {xs ys : List α} (h₁ : All P xs) (h₂ : All P ys)",
            "All P (xs ++ ys)",
            block(
                "induction h₁ with",
                alt(
                    "nil", g(f"{A}\nP : α → Prop\nys : List α\nh₂ : All P ys", "All P ([] ++ ys)", "nil"), S("exact h₂")
                ),
                alt("cons hx _ ih", g(all_cons, "All P (x✝ :: xs✝ ++ ys)", "cons"), S("exact All.cons hx ih")),
            ),
        ),
        thm(
            "all_snoc",
            "{α : Type} {P : α → Prop} (xs : List α) (a : α)",
            "All P xs → P a → All P (snoc xs a)",
            S("intro h ha", g(f"{A}\nP : α → Prop\nxs : List α\na : α\nh : All P xs\nha : P a", "All P (snoc xs a)")),
            S(
                "rw [snoc_append]",
                g(f"{A}\nP : α → Prop\nxs : List α\na : α\nh : All P xs\nha : P a", "All P (xs ++ [a])"),
            ),
            S("exact all_append h (All.cons ha All.nil)"),
        ),
        thm(
            "all_of_forall",
            "{α : Type} {P : α → Prop} (xs : List α) (h : ∀ (x : α), P x)",
            "All P xs",
            _nil_cons(
                f"{A}\nP : α → Prop\nh : ∀ (x : α), P x",
                "All P []",
                f"{A}\nP : α → Prop\nh : ∀ (x : α), P x\nx : α\nxs : List α\nih : All P xs",
                "All P (x :: xs)",
                [S("exact All.nil")],
                [S("exact All.cons (h x) ih")],
            ),
        ),
        Comment("/-! ## `Pair` -/"),
        thm(
            "swap_swap",
            "{α : Type} (p : Pair α)",
            "p.swap.swap = p",
            S(
                "cases p",
                g(f"{A}\nfst✝ snd✝ : α", "{ fst := fst✝, snd := snd✝ }.swap.swap = { fst := fst✝, snd := snd✝ }", "mk"),
            ),
            S("rfl"),
        ),
        term("swap_fst", "{α : Type} (p : Pair α)", "p.swap.fst = p.snd", "rfl"),
        term("swap_snd", "{α : Type} (p : Pair α)", "p.swap.snd = p.fst", "rfl"),
    )
    return LeanFile(
        f"{NAME}.Basic", (), "# Basic definitions\n\n`sum`, `snoc`, `rev`, `countP`, `All` and `Pair`.", NAME, items
    )


def _append() -> LeanFile:
    assoc = f"{A}\nys zs : List α\nx : α\nxs : List α\nih : xs ++ ys ++ zs = xs ++ (ys ++ zs)"
    length = f"{A}\nys : List α\nx : α\nxs : List α\nih : (xs ++ ys).length = xs.length + ys.length"
    items = (
        thm("append_nil'", "{α : Type} (xs : List α)", "xs ++ [] = xs", S("simp")),
        term("nil_append'", "{α : Type} (xs : List α)", "[] ++ xs = xs", "rfl"),
        thm(
            "append_assoc'",
            "{α : Type} (xs ys zs : List α)",
            "xs ++ ys ++ zs = xs ++ (ys ++ zs)",
            _nil_cons(
                f"{A}\nys zs : List α",
                "[] ++ ys ++ zs = [] ++ (ys ++ zs)",
                assoc,
                "x :: xs ++ ys ++ zs = x :: xs ++ (ys ++ zs)",
                [S("rfl")],
                [S("simp only [List.cons_append, ih]")],
            ),
        ),
        thm(
            "length_append'",
            "{α : Type} (xs ys : List α)",
            "(xs ++ ys).length = xs.length + ys.length",
            _nil_cons(
                f"{A}\nys : List α",
                "([] ++ ys).length = [].length + ys.length",
                length,
                "(x :: xs ++ ys).length = (x :: xs).length + ys.length",
                [S("simp")],
                [
                    S(
                        "simp only [List.cons_append, List.length_cons, ih]",
                        g(length, "xs.length + ys.length + 1 = xs.length + 1 + ys.length", "cons"),
                    ),
                    S("omega"),
                ],
            ),
        ),
        thm(
            "append_eq_nil_left",
            "{α : Type} (xs ys : List α) (h : xs ++ ys = [])",
            "xs = []",
            block(
                "cases xs with",
                alt("nil", g(f"{A}\nys : List α\nh : [] ++ ys = []", "[] = []", "nil"), S("rfl")),
                alt(
                    "cons x xs",
                    g(f"{A}\nys : List α\nx : α\nxs : List α\nh : x :: xs ++ ys = []", "x :: xs = []", "cons"),
                    S("simp at h"),
                ),
            ),
        ),
        thm(
            "append_cancel_left'",
            "{α : Type} (xs ys zs : List α)",
            "xs ++ ys = xs ++ zs → ys = zs",
            S("intro h", g(f"{A}\nxs ys zs : List α\nh : xs ++ ys = xs ++ zs", "ys = zs")),
            S("exact List.append_cancel_left h"),
        ),
        thm("append_ne_nil_of_left", "{α : Type} (xs ys : List α) (h : xs ≠ [])", "xs ++ ys ≠ []", S("simp [h]")),
        thm(
            "length_append_le",
            "{α : Type} (xs ys : List α)",
            "xs.length ≤ (xs ++ ys).length",
            S("rw [List.length_append]", g(f"{A}\nxs ys : List α", "xs.length ≤ xs.length + ys.length")),
            S("omega"),
        ),
        thm(
            "length_append_comm",
            "{α : Type} (xs ys : List α)",
            "(xs ++ ys).length = (ys ++ xs).length",
            S(
                "simp only [List.length_append]",
                g(f"{A}\nxs ys : List α", "xs.length + ys.length = ys.length + xs.length"),
            ),
            S("rw [Nat.add_comm]"),
        ),
        Comment("/-! ## Membership -/"),
        thm("mem_append_left'", "{α : Type} (x : α) (xs ys : List α) (h : x ∈ xs)", "x ∈ xs ++ ys", S("simp [h]")),
        thm("mem_append_right'", "{α : Type} (x : α) (xs ys : List α) (h : x ∈ ys)", "x ∈ xs ++ ys", S("simp [h]")),
        thm(
            "mem_snoc",
            "{α : Type} (xs : List α) (a : α)",
            "a ∈ snoc xs a",
            S("rw [snoc_append]", g(f"{A}\nxs : List α\na : α", "a ∈ xs ++ [a]")),
            S("simp"),
        ),
        thm(
            "snoc_ne_nil",
            "{α : Type} (xs : List α) (a : α)",
            "snoc xs a ≠ []",
            S("rw [snoc_append]", g(f"{A}\nxs : List α\na : α", "xs ++ [a] ≠ []")),
            S("simp"),
        ),
        thm(
            "snoc_append_assoc",
            "{α : Type} (xs ys : List α) (a : α)",
            "snoc (xs ++ ys) a = xs ++ snoc ys a",
            S("rw [snoc_append, snoc_append]", g(f"{A}\nxs ys : List α\na : α", "xs ++ ys ++ [a] = xs ++ (ys ++ [a])")),
            S("exact append_assoc' xs ys [a]"),
        ),
        Comment("/-! ## Sums of appended lists -/"),
        thm(
            "sum_append_comm",
            "(xs ys : List Nat)",
            "sum (xs ++ ys) = sum (ys ++ xs)",
            S("rw [sum_append, sum_append]", g("xs ys : List Nat", "sum xs + sum ys = sum ys + sum xs")),
            S("omega"),
        ),
        thm(
            "sum_append_three",
            "(xs ys zs : List Nat)",
            "sum (xs ++ ys ++ zs) = sum xs + sum ys + sum zs",
            S("rw [sum_append, sum_append]"),
        ),
        thm(
            "sum_snoc_snoc",
            "(xs : List Nat) (a b : Nat)",
            "sum (snoc (snoc xs a) b) = sum xs + a + b",
            S("rw [sum_snoc]", g("xs : List Nat\na b : Nat", "sum (snoc xs a) + b = sum xs + a + b")),
            S("rw [sum_snoc]"),
        ),
        thm(
            "sum_le_sum_append",
            "(xs ys : List Nat)",
            "sum xs ≤ sum (xs ++ ys)",
            S("rw [sum_append]", g("xs ys : List Nat", "sum xs ≤ sum xs + sum ys")),
            S("omega"),
        ),
        thm(
            "length_snoc_pos",
            "{α : Type} (xs : List α) (a : α)",
            "0 < (snoc xs a).length",
            S("rw [length_snoc]", g(f"{A}\nxs : List α\na : α", "0 < xs.length + 1")),
            S("omega"),
        ),
        thm(
            "countP_le_countP_append",
            "{α : Type} (p : α → Bool) (xs ys : List α)",
            "countP p xs ≤ countP p (xs ++ ys)",
            S("rw [countP_append]", g(f"{A}\np : α → Bool\nxs ys : List α", "countP p xs ≤ countP p xs + countP p ys")),
            S("omega"),
        ),
        thm(
            "append_inj",
            "{α : Type} (xs ys zs ws : List α) (h : xs ++ ys = zs ++ ws) (hl : xs.length = zs.length)",
            "xs = zs ∧ ys = ws",
            S("sorry"),
        ),
    )
    return LeanFile(
        f"{NAME}.Append", (f"{NAME}.Basic",), "# Append\n\nLemmas about `++`, membership and `snoc`.", NAME, items
    )


def _map() -> LeanFile:
    ab = "α β : Type\nf : α → β"
    dbl = "x : Nat\nxs : List Nat\nih : doubleAll xs = List.map (fun x => 2 * x) xs"
    sdbl = "x : Nat\nxs : List Nat\nih : sum (doubleAll xs) = 2 * sum xs"
    inj = "α β : Type\nf : α → β\nhf : ∀ (a b : α), f a = f b → a = b\nys : List α"
    items = (
        Decl(
            "def",
            "doubleAll",
            "/-- Double every element. -/\ndef doubleAll : List Nat → List Nat\n  | [] => []\n"
            "  | x :: xs => 2 * x :: doubleAll xs",
        ),
        thm(
            "length_map'",
            "{α β : Type} (f : α → β) (xs : List α)",
            "(List.map f xs).length = xs.length",
            _nil_cons(
                ab,
                "(List.map f []).length = [].length",
                f"{ab}\nx : α\nxs : List α\nih : (List.map f xs).length = xs.length",
                "(List.map f (x :: xs)).length = (x :: xs).length",
                [S("rfl")],
                [S("simp [ih]")],
            ),
        ),
        thm(
            "map_append'",
            "{α β : Type} (f : α → β) (xs ys : List α)",
            "List.map f (xs ++ ys) = List.map f xs ++ List.map f ys",
            _nil_cons(
                f"{ab}\nys : List α",
                "List.map f ([] ++ ys) = List.map f [] ++ List.map f ys",
                f"{ab}\nys : List α\nx : α\nxs : List α\nih : List.map f (xs ++ ys) = List.map f xs ++ List.map f ys",
                "List.map f (x :: xs ++ ys) = List.map f (x :: xs) ++ List.map f ys",
                [S("rfl")],
                [S("simp [ih]")],
            ),
        ),
        thm("map_id'", "{α : Type} (xs : List α)", "List.map (fun x => x) xs = xs", S("simp")),
        thm(
            "map_map'",
            "{α β γ : Type} (f : α → β) (g : β → γ) (xs : List α)",
            "List.map g (List.map f xs) = List.map (g ∘ f) xs",
            _nil_cons(
                "α β γ : Type\nf : α → β\ng : β → γ",
                "List.map g (List.map f []) = List.map (g ∘ f) []",
                "α β γ : Type\nf : α → β\ng : β → γ\nx : α\nxs : List α\n"
                "ih : List.map g (List.map f xs) = List.map (g ∘ f) xs",
                "List.map g (List.map f (x :: xs)) = List.map (g ∘ f) (x :: xs)",
                [S("rfl")],
                [S("simp [ih]")],
            ),
        ),
        thm(
            "mem_map_of_mem'",
            "{α β : Type} (f : α → β) (x : α) (xs : List α) (h : x ∈ xs)",
            "f x ∈ List.map f xs",
            S("rw [List.mem_map]", g(f"{ab}\nx : α\nxs : List α\nh : x ∈ xs", "∃ a, a ∈ xs ∧ f a = f x")),
            S("exact ⟨x, h, rfl⟩"),
        ),
        thm(
            "map_snoc",
            "{α β : Type} (f : α → β) (xs : List α) (a : α)",
            "List.map f (snoc xs a) = snoc (List.map f xs) (f a)",
            S(
                "rw [snoc_append, snoc_append]",
                g(f"{ab}\nxs : List α\na : α", "List.map f (xs ++ [a]) = List.map f xs ++ [f a]"),
            ),
            S("simp"),
        ),
        thm(
            "length_map_const",
            "{α : Type} (xs : List α)",
            "(List.map (fun _ => 0) xs).length = xs.length",
            S("exact length_map' (fun _ => 0) xs"),
            goal="(List.map (fun x => 0) xs).length = xs.length",
        ),
        thm(
            "sum_map_zero",
            "{α : Type} (xs : List α)",
            "sum (List.map (fun _ => 0) xs) = 0",
            _nil_cons(
                A,
                "sum (List.map (fun x => 0) []) = 0",
                f"{A}\nx : α\nxs : List α\nih : sum (List.map (fun x => 0) xs) = 0",
                "sum (List.map (fun x => 0) (x :: xs)) = 0",
                [S("rfl")],
                [S("simp only [List.map, sum, ih]")],
            ),
            goal="sum (List.map (fun x => 0) xs) = 0",
        ),
        Comment("/-! ## `doubleAll` -/"),
        thm(
            "doubleAll_eq_map",
            "(xs : List Nat)",
            "doubleAll xs = List.map (fun x => 2 * x) xs",
            _nil_cons(
                "",
                "doubleAll [] = List.map (fun x => 2 * x) []",
                dbl,
                "doubleAll (x :: xs) = List.map (fun x => 2 * x) (x :: xs)",
                [S("rfl")],
                [S("simp [doubleAll, ih]")],
            ),
        ),
        thm(
            "sum_doubleAll",
            "(xs : List Nat)",
            "sum (doubleAll xs) = 2 * sum xs",
            _nil_cons(
                "",
                "sum (doubleAll []) = 2 * sum []",
                sdbl,
                "sum (doubleAll (x :: xs)) = 2 * sum (x :: xs)",
                [S("rfl")],
                [
                    S("simp only [doubleAll, sum, ih]", g(sdbl, "2 * x + 2 * sum xs = 2 * (x + sum xs)", "cons")),
                    S("omega"),
                ],
            ),
        ),
        thm(
            "length_doubleAll",
            "(xs : List Nat)",
            "(doubleAll xs).length = xs.length",
            S("rw [doubleAll_eq_map]", g("xs : List Nat", "(List.map (fun x => 2 * x) xs).length = xs.length")),
            S("rw [List.length_map]"),
        ),
        thm(
            "doubleAll_append",
            "(xs ys : List Nat)",
            "doubleAll (xs ++ ys) = doubleAll xs ++ doubleAll ys",
            S(
                "rw [doubleAll_eq_map, doubleAll_eq_map, doubleAll_eq_map]",
                g(
                    "xs ys : List Nat",
                    "List.map (fun x => 2 * x) (xs ++ ys) = "
                    "List.map (fun x => 2 * x) xs ++ List.map (fun x => 2 * x) ys",
                ),
            ),
            S("exact map_append' _ xs ys"),
        ),
        thm(
            "sum_replicate",
            "(n k : Nat)",
            "sum (List.replicate n k) = n * k",
            block(
                "induction n with",
                alt("zero", g("k : Nat", "sum (List.replicate 0 k) = 0 * k", "zero"), S("simp")),
                alt(
                    "succ n ih",
                    g(
                        "k n : Nat\nih : sum (List.replicate n k) = n * k",
                        "sum (List.replicate (n + 1) k) = (n + 1) * k",
                        "succ",
                    ),
                    S(
                        "simp only [List.replicate, sum, ih]",
                        g("k n : Nat\nih : sum (List.replicate n k) = n * k", "k + n * k = (n + 1) * k", "succ"),
                    ),
                    S("rw [Nat.add_mul, Nat.one_mul, Nat.add_comm]"),
                ),
            ),
        ),
        thm(
            "doubleAll_snoc",
            "(xs : List Nat) (a : Nat)",
            "doubleAll (snoc xs a) = snoc (doubleAll xs) (2 * a)",
            S(
                "rw [doubleAll_eq_map, doubleAll_eq_map]",
                g(
                    "xs : List Nat\na : Nat",
                    "List.map (fun x => 2 * x) (snoc xs a) = snoc (List.map (fun x => 2 * x) xs) (2 * a)",
                ),
            ),
            S("exact map_snoc (fun x => 2 * x) xs a"),
        ),
        thm(
            "map_injective",
            "{α β : Type} (f : α → β) (hf : ∀ (a b : α), f a = f b → a = b) (xs ys : List α) "
            "(h : List.map f xs = List.map f ys)",
            "xs = ys",
            _nil_cons(
                f"{inj}\nh : List.map f [] = List.map f ys",
                "[] = ys",
                f"{inj}\nx : α\nxs : List α\nih : List.map f xs = List.map f ys → xs = ys\n"
                "h : List.map f (x :: xs) = List.map f ys",
                "x :: xs = ys",
                [S("sorry")],
                [S("sorry")],
            ),
        ),
    )
    return LeanFile(f"{NAME}.Map", (f"{NAME}.Basic",), "# Map\n\n`List.map` and `doubleAll`.", NAME, items)


def _reverse() -> LeanFile:
    rs = f"{A}\na x : α\nxs : List α\nih : rev (snoc xs a) = a :: rev xs"
    rr = f"{A}\nx : α\nxs : List α\nih : rev (rev xs) = xs"
    re = f"{A}\nx : α\nxs : List α\nih : rev xs = xs.reverse"
    sr = "x : Nat\nxs : List Nat\nih : sum (rev xs) = sum xs"
    cr = f"{A}\np : α → Bool\nx : α\nxs : List α\nih : countP p (rev xs) = countP p xs"
    inj = f"{A}\nxs ys : List α\nh : rev xs = rev ys"
    items = (
        term("rev_nil", "{α : Type}", "rev ([] : List α) = []", "rfl"),
        term("rev_singleton", "{α : Type} (a : α)", "rev [a] = [a]", "rfl"),
        thm(
            "rev_snoc",
            "{α : Type} (xs : List α) (a : α)",
            "rev (snoc xs a) = a :: rev xs",
            _nil_cons(
                f"{A}\na : α",
                "rev (snoc [] a) = a :: rev []",
                rs,
                "rev (snoc (x :: xs) a) = a :: rev (x :: xs)",
                [S("rfl")],
                [S("simp [snoc, rev, ih]")],
            ),
        ),
        thm(
            "rev_rev",
            "{α : Type} (xs : List α)",
            "rev (rev xs) = xs",
            _nil_cons(
                A, "rev (rev []) = []", rr, "rev (rev (x :: xs)) = x :: xs", [S("rfl")], [S("simp [rev, rev_snoc, ih]")]
            ),
        ),
        thm(
            "rev_eq_reverse",
            "{α : Type} (xs : List α)",
            "rev xs = xs.reverse",
            _nil_cons(
                A,
                "rev [] = [].reverse",
                re,
                "rev (x :: xs) = (x :: xs).reverse",
                [S("rfl")],
                [S("simp [rev, snoc_append, ih]")],
            ),
        ),
        thm(
            "length_rev",
            "{α : Type} (xs : List α)",
            "(rev xs).length = xs.length",
            S("rw [rev_eq_reverse]", g(f"{A}\nxs : List α", "xs.reverse.length = xs.length")),
            S("rw [List.length_reverse]"),
        ),
        thm(
            "rev_append", "{α : Type} (xs ys : List α)", "rev (xs ++ ys) = rev ys ++ rev xs", S("simp [rev_eq_reverse]")
        ),
        thm(
            "length_rev_append",
            "{α : Type} (xs ys : List α)",
            "(rev (xs ++ ys)).length = xs.length + ys.length",
            S("rw [length_rev]", g(f"{A}\nxs ys : List α", "(xs ++ ys).length = xs.length + ys.length")),
            S("exact length_append' xs ys"),
        ),
        thm(
            "sum_rev",
            "(xs : List Nat)",
            "sum (rev xs) = sum xs",
            _nil_cons(
                "",
                "sum (rev []) = sum []",
                sr,
                "sum (rev (x :: xs)) = sum (x :: xs)",
                [S("rfl")],
                [S("simp only [rev, sum_snoc, ih, sum]", g(sr, "sum xs + x = x + sum xs", "cons")), S("omega")],
            ),
        ),
        thm(
            "mem_rev",
            "{α : Type} (x : α) (xs : List α)",
            "x ∈ rev xs ↔ x ∈ xs",
            S("rw [rev_eq_reverse]", g(f"{A}\nx : α\nxs : List α", "x ∈ xs.reverse ↔ x ∈ xs")),
            S("exact List.mem_reverse"),
        ),
        thm(
            "rev_inj",
            "{α : Type} (xs ys : List α)",
            "rev xs = rev ys → xs = ys",
            S("intro h", g(inj, "xs = ys")),
            S("have h' := congrArg rev h", g(inj + "\nh' : rev (rev xs) = rev (rev ys)", "xs = ys")),
            S("simpa [rev_rev] using h'"),
        ),
        thm(
            "rev_palindrome_mem",
            "{α : Type} (xs : List α) (x : α) (h : rev xs = xs) (hx : x ∈ xs)",
            "x ∈ rev xs",
            S("rw [h]", g(f"{A}\nxs : List α\nx : α\nh : rev xs = xs\nhx : x ∈ xs", "x ∈ xs")),
            S("exact hx"),
        ),
        thm(
            "rev_snoc_snoc",
            "{α : Type} (xs : List α) (a b : α)",
            "rev (snoc (snoc xs a) b) = b :: a :: rev xs",
            S("rw [rev_snoc]", g(f"{A}\nxs : List α\na b : α", "b :: rev (snoc xs a) = b :: a :: rev xs")),
            S("rw [rev_snoc]"),
        ),
        thm(
            "countP_rev",
            "{α : Type} (p : α → Bool) (xs : List α)",
            "countP p (rev xs) = countP p xs",
            _nil_cons(
                f"{A}\np : α → Bool",
                "countP p (rev []) = countP p []",
                cr,
                "countP p (rev (x :: xs)) = countP p (x :: xs)",
                [S("rfl")],
                [
                    S(
                        "simp only [rev, countP]",
                        g(cr, "countP p (snoc (rev xs) x) = (if p x = true then 1 else 0) + countP p xs", "cons"),
                    ),
                    S("sorry"),
                ],
            ),
        ),
    )
    return LeanFile(
        f"{NAME}.Reverse",
        (f"{NAME}.Basic", f"{NAME}.Append"),
        "# Reverse\n\n`rev`, defined with `snoc`, agrees with `List.reverse`.",
        NAME,
        items,
    )


def repo() -> LeanRepo:
    files = (_basic(), _append(), _map(), _reverse())
    root = LeanFile(NAME, tuple(f.module for f in files), "", None, ())
    return LeanRepo(NAME, "Medium: lists, mostly proofs by induction of three to six steps.", files + (root,))
