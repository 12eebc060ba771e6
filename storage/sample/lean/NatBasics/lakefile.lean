import Lake
open Lake DSL

-- Easy: arithmetic on Nat, mostly one- and two-step proofs.
-- Dojoflow sample data, written by storage/sample/generate.py: Lean 4 core only.
package «NatBasics» where
  -- no dependencies

@[default_target]
lean_lib «NatBasics» where
  -- the root module `NatBasics` imports every file
