"""Test doubles of Lean's processes and servers, speaking their real protocols (docs/lean-backends.md)."""
