namespace «123»
theorem foo : 1 + 1 = 2 := by
  rfl
end «123»
