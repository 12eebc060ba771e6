import Lake
open Lake DSL

-- Hard: logic and puzzles, proofs of four to nine steps with several goals.
-- Dojoflow sample data, written by storage/sample/generate.py: Lean 4 core only.
package «LogicPuzzles» where
  -- no dependencies

@[default_target]
lean_lib «LogicPuzzles» where
  -- the root module `LogicPuzzles` imports every file
