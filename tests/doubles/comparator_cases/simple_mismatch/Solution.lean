axiom comm (n m : Nat) : m + m = m + m
