import Lake
open Lake DSL

-- Medium: lists, mostly proofs by induction of three to six steps.
-- Dojoflow sample data, written by storage/sample/generate.py: Lean 4 core only.
package «ListLemmas» where
  -- no dependencies

@[default_target]
lean_lib «ListLemmas» where
  -- the root module `ListLemmas` imports every file
