axiom f : False
opaque v : False := f
theorem boom : False := v
