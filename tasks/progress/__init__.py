"""The proof-progress model: regression of the number of proof steps remaining.

Given a goal state, the tactics applied so far (the prefix) and a candidate tactic,
an encoder with a one-output regression head predicts how many tactics the proof
still needs, counting the candidate itself (LeanProgress, as in LeanDojo-v2's
ProgressTrainer). A prover ranks candidate tactics by it: fewer is better.

    config.py    ProgressSettings (model, sequence length, TrainingArguments)
    data.py      rows from a snapshot, the input template, JSONL import/export
    imported.py  JSONL datasets imported into the store (`dojoflow import-progress`), extra train rows
    model.py     tokenizer/model loading and input encoding shared by all of the below
    train.py     train_progress: one curriculum step with transformers.Trainer
    evaluate.py  evaluate_progress: MAE, MSE, Spearman per repository and split
    scorer.py    ProgressScorer: load a checkpoint, score candidate tactics
    trainer.py   the curriculum trainer declaration (docs/adding-a-trainer.md)
    errors.py    ModelMismatchError

Nothing here imports Prefect; torch and transformers are imported inside functions.
"""
