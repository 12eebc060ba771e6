"""Split a tactic block into its top-level tactics, for backends that take one tactic at a time.

lean-dojo's `Lean4Repl` parses each request as exactly one tactic
(`Parser.runParserCategory env `tactic cmd`, Lean4Repl.lean:222 in lean-dojo 4.20.0): a
block of two tactics is a parse error ("expected end of input"), so the `leandojo`
backend sends a whole proof one tactic at a time (docs/lean-backends.md).

The split follows Lean's layout rule for a tactic sequence (`sepByIndent tactic "; "`,
`Lean.Parser.Tactic.tacticSeq1Indented`): tactics are separated by `;` or by a new line
that starts at the block's column; lines indented further continue the tactic above
(a focusing `·` block, `case ... =>`, a long `simp [...]`), and so do lines at the block's
column that start with `|` (the alternatives of `induction ... with`, `cases ... with`,
`match`) or `<;>` (a combinator continues its left side). `;` inside brackets and the `;`
of `<;>` do not split.

The limit, said plainly: this is a layout reading, not Lean's parser. A tactic whose
continuation lines sit at the block's column other than the cases above (rare; e.g. a
`calc` whose steps are not indented) is split wrongly and then fails in the Dojo as
Lean would fail on the fragment: the proof counts as not proved, never as proved.

    >>> split_tactics("intro n\\ninduction n with\\n| zero => simp\\n| succ k ih =>\\n  simp [ih]")
    ['intro n', 'induction n with\\n| zero => simp\\n| succ k ih =>\\n  simp [ih]']
    >>> split_tactics("constructor <;> simp; omega")
    ['constructor <;> simp', 'omega']
"""

from __future__ import annotations

import textwrap

_CONTINUES = ("|", "<;>")
_OPEN, _CLOSE = "([{⟨", ")]}⟩"


def _split_semicolons(text: str) -> list[str]:
    """Split at `;` outside brackets, strings and comments, but not the `;` of `<;>`."""
    parts, depth, start, i, in_string = [], 0, 0, 0, False
    while i < len(text):
        ch = text[i]
        if in_string:
            if ch == "\\":
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif text.startswith("--", i):  # a line comment runs to the end of the line
            nl = text.find("\n", i)
            i = len(text) if nl < 0 else nl
            continue
        elif ch in _OPEN:
            depth += 1
        elif ch in _CLOSE:
            depth = max(0, depth - 1)
        elif ch == ";" and depth == 0 and not text.startswith("<;>", i - 1):
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def split_tactics(proof: str) -> list[str]:
    """The top-level tactics of `proof` (the text after `:= by`), in order, each as Lean
    would parse it on its own; comment-only lines are dropped."""
    lines = [ln.rstrip() for ln in textwrap.dedent(proof.strip("\n")).split("\n")]
    lines = [ln for ln in lines if ln.strip() and not ln.lstrip().startswith("--")]
    if not lines:
        return []
    column = min(len(ln) - len(ln.lstrip()) for ln in lines)
    blocks: list[list[str]] = []
    for line in lines:
        indent = len(line) - len(line.lstrip())
        starts_new = indent == column and not line.lstrip().startswith(_CONTINUES)
        if starts_new or not blocks:
            blocks.append([line[column:]])
        else:
            blocks[-1].append(line[column:])
    tactics: list[str] = []
    for block in blocks:
        if len(block) == 1:
            tactics.extend(_split_semicolons(block[0]))
        else:
            tactics.append("\n".join(block))
    return tactics
