"""What the three sample repositories contain: declarations, theorems, tactic steps
and goal states, one module per repository (see `storage/sample/lean_model.py`)."""
