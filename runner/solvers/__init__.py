"""Solvers: how a sample is asked (a chat prompt with few-shot turns; more to come: audio, agents)."""
