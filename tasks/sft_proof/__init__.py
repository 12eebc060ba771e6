"""Whole-proof SFT (docs/whole-proof.md): settings (`config.py`), traced theorems' whole proofs read
back from their source spans (`traced.py`), proof rows -> prompt-completion examples (`data.py`),
training (`train.py`), sampling (`generate.py`), pass@k evaluation (`evaluate.py`) and the trainer
declaration (`trainer.py`). Importing this package imports no torch."""
