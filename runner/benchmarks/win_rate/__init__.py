"""Pairwise win rate: a judge panel compares two models' earlier answers question by question."""
