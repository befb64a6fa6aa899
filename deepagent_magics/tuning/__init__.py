"""Tuning: measure the agent on examples from the notebook and improve it with DSPy's optimisers.

- `examples`: examples and metrics; `systems`: the deep agent and baselines as evaluation runs them
- `evaluate`: the table; `progress`: its progress bars
- `optimize`: GEPA, MIPROv2, BootstrapFewShot; `programs`: the active tuned program per profile
"""

from .evaluate import Evaluation, evaluate
from .examples import ExamplesError, Metric, as_examples
from .optimize import Optimization, compile_agent, optimize
from .systems import BASELINES, DEEP_AGENT, OPTIMIZED, systems_for

__all__ = ["Evaluation", "evaluate", "ExamplesError", "Metric", "as_examples", "Optimization", "compile_agent",
           "optimize", "BASELINES", "DEEP_AGENT", "OPTIMIZED", "systems_for"]
