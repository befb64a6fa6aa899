"""Tuning: measure the agent on examples from the notebook and improve it with DSPy's optimisers.

- `examples`: examples and metrics; `systems`: the deep agent and baselines as evaluation runs them
- `evaluate`: the table; `progress`: its progress bars
- `optimize`: GEPA, MIPROv2, BootstrapFewShot; `programs`: the active tuned program per profile
"""

from ..first_use import first_use

# Each imported on first use: a cell that runs the agent (and asks `programs` for a tuned one) loads no optimiser.
ON_FIRST_USE = {"Evaluation": "evaluate", "evaluate": "evaluate", "ExamplesError": "examples", "Metric": "examples",
                "as_examples": "examples", "Optimization": "optimize", "compile_agent": "optimize",
                "optimize": "optimize", "BASELINES": "systems", "DEEP_AGENT": "systems", "OPTIMIZED": "systems",
                "systems_for": "systems"}
__getattr__, __dir__ = first_use(__name__, ON_FIRST_USE)

__all__ = ["Evaluation", "evaluate", "ExamplesError", "Metric", "as_examples", "Optimization", "compile_agent",
           "optimize", "BASELINES", "DEEP_AGENT", "OPTIMIZED", "systems_for"]
