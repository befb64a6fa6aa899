"""What the tuning room's front doors offer to choose from: the baselines beside the deep agent, the
optimisers and their budget presets, the benchmark's suites.

Plain names, kept apart from the modules that run them (`systems`, `optimize`, `bench`, which import
DSPy), so that the magics can list them in their help when the extension loads, without loading DSPy.
"""

BASELINES = ("cot", "react", "rlm")  # systems.py: ChainOfThought, ReAct and a bare dspy.RLM beside the deep agent
DEEPAGENTS = "deepagents"  # langchain_baseline.py: LangChain's deep agent, in the benchmark only (when installed)
BENCH_BASELINES = (*BASELINES, DEEPAGENTS)
OPTIMIZERS = ("gepa", "mipro", "bootstrap")  # optimize.py
AUTO = ("light", "medium", "heavy")  # gepa's and mipro's budget presets
SUITES = ("dabstep", "dabench", "oolong", "sklearn")  # suites/: the names of suites.SUITES, in its order
