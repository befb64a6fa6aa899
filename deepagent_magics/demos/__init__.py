"""Scripted demos: the models that play the agent when no real LM is configured (``make demo``, the notebooks)."""
