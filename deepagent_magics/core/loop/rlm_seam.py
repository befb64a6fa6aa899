"""The one seam over dspy.RLM's prompt: the model reads our instructions, our inputs, the code as it runs.

dspy.RLM writes its own action prompt: a template with a second list of the tools, a second
workflow, advice about building ``dspy.Predict`` sub-agents in the REPL, and each input
previewed in a 1,000-character head and tail. `AgentRLM` keeps RLM's loop and replaces that
text, here and nowhere else, by overriding three of its methods (a fourth, below, for ``llm_query``):

- ``_build_signatures``: the action signature's instructions are `instructions.compose`'s
  (the profile, the REPL's rules, each offered tool once); its fields are RLM's
  (``variables_info``, ``repl_history``, ``iteration`` -> ``reasoning``, ``code``);
- ``_action_signature_for_current_factory``: per run, a REPL whose rules differ from the ones the
  signature was built with (a gateway's kernels) has them swapped in, and a factory's
  ``run_instructions``, if it has any, follow the instructions (the agent's own runs put what they
  have in each request instead: `DeepAgent.render_inputs`); RLM's own sub-agent guidance is never added;
- ``_build_variables``: one `Rendered` text (`inputs_view`: the task, the context, the
  variables view, each whole up to a budget) in place of RLM's previews. RLM hands it to the
  action predictor as a one-item list; `one_text` makes that the plain text the model reads.

And each ``llm_query`` prompt: ``_make_llm_tools`` builds RLM's own ``llm_query`` and
``llm_query_batched`` (its budget, its threads) over a sub-LM that is a `QueryLM`, so every prompt is a
`calls.QUERY` call through the pipeline the agent hands in (``through``); the facade keeps RLM's
``sub_lm`` itself.

And the code: `as_run` takes the Markdown fences off the model's code (`code_fences`) and marks
it `Code`, which RLM's own fence stripping (``_strip_code_fences``) leaves as it is: what is
stored for the step is exactly what ran, even code that builds a Markdown report with fences in
a string. `tests/core/test_dspy_contract.py` fails loudly when DSPy changes any of this.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any, Callable

import dspy
from dspy.primitives.code_interpreter import resolve_interpreter_factory
from dspy.primitives.repl_types import REPLHistory

from ..model.calls import QUERY, ModelCall, Through, plain
from ..model.code_fences import runnable
from ..run import session as _session

ACTION_INPUTS = {
    "variables_info": "the task, its context, the variables",
    "repl_history": "your earlier steps",
    "iteration": "step number / the most allowed",
}
ACTION_OUTPUTS = {
    "reasoning": "what you know, what remains, your next step",
    "code": "Python code to run",  # fenced or not: the fences come off (code_fences)
}
EXTRACT_INSTRUCTIONS = ("The steps ran out. From the REPL history above, give the final outputs now: what you "
                        "computed and found, as the task asked.")
Compose = Callable[[str, list, str, dict], str]  # (profile text, [(name, tool)], REPL rules, outputs) -> text


class Code(str):
    """Code to run as it is: RLM's fence stripping (`dspy.predict.rlm._strip_code_fences`) returns it unchanged."""

    def strip(self, chars: str | None = None) -> str:
        return self if chars is None else str.strip(self, chars)

    def __contains__(self, part: object) -> bool:
        return False if part == "```" else str.__contains__(self, part)


def as_run(code: Any) -> Any:
    """The model's code without its fences, as a `Code`; text that is not Python stays as written
    (RLM then says which fence it found instead of running it)."""
    if not isinstance(code, str) or isinstance(code, Code):
        return code
    text = runnable(code)
    if text.strip() and not text.lstrip().startswith(("```", "~~~")):
        return Code(text)
    return code


class Rendered:
    """The run's inputs as one text, where RLM keeps a list of `REPLVariable`s (it calls ``format()``)."""

    def __init__(self, text: str):
        self.text = text

    def format(self) -> str:
        return self.text


def one_text(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The action predictor's inputs with ``variables_info`` as the one text the model reads."""
    value = kwargs.get("variables_info")
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        kwargs = {**kwargs, "variables_info": "\n\n".join(value)}
    return kwargs


class OneTextPredict(dspy.Predict):
    """RLM's ``extract`` step (when the steps run out), reading the same one text."""

    def forward(self, **kwargs: Any) -> Any:
        return super().forward(**one_text(kwargs))

    async def aforward(self, **kwargs: Any) -> Any:
        return await super().aforward(**one_text(kwargs))


class QueryLM:
    """RLM's sub-LM as ``llm_query`` sees it: each prompt a `calls.QUERY` call through ``through``, made on
    ``lm`` (RLM's ``sub_lm``), else on ``dspy.settings.lm`` when it is made."""

    def __init__(self, lm: Any, through: Through):
        self.lm = lm
        self.through = through

    def __call__(self, prompt: str) -> Any:
        lm = self.lm if self.lm is not None else dspy.settings.lm
        if lm is None:
            raise dspy.LMNotConfiguredError("No LM configured. Use dspy.configure(lm=...) or pass sub_lm to RLM.")
        call = ModelCall(None, _session.active(), {"prompt": prompt}, lm, False, QUERY)
        return self.through(call, lambda **inputs: call.lm(inputs["prompt"]))(prompt=prompt)


class AgentRLM(dspy.RLM):
    """``dspy.RLM`` whose action prompt is ours (see the module docstring).

    Args:
        compose: builds the instructions from (the profile's text, the offered tools as
            (name, callable) pairs, the REPL's rules, {output field: what it is}).
        render_inputs: the run's input values -> the text the model reads for them.
        through: how an ``llm_query`` prompt is made (the pipeline's `through`; default: as it is).
    """

    def __init__(self, signature: Any, *, compose: Compose, render_inputs: Callable[[dict[str, Any]], str],
                 through: Through = plain, **kwargs: Any):
        self._compose = compose
        self._render_inputs = render_inputs
        self._through = through
        self._per_run: dict[tuple, Any] = {}
        self._per_run_lock = threading.Lock()
        super().__init__(signature, **kwargs)
        self.extract = OneTextPredict(self.extract.signature)

    def _build_signatures(self) -> tuple[Any, Any]:
        factory = resolve_interpreter_factory(self._interpreter_factory)
        rules = self._get_execution_instructions(factory)
        self._initial_execution_instructions = rules
        self._initial_sub_agent_rules = self._initial_interpreter_rules = ""
        outputs = {name: str((field.json_schema_extra or {}).get("desc", "")) for name, field
                   in self.signature.output_fields.items()}
        tools = [(name, tool.func) for name, tool in self._user_tools.items()]
        instructions = self._compose(self.signature.instructions, tools, rules, outputs)
        action = dspy.Signature({}, instructions)
        for name, desc in ACTION_INPUTS.items():
            action = action.append(name, dspy.InputField(desc=desc),
                                   type_=REPLHistory if name == "repl_history" else str)
        for name, desc in ACTION_OUTPUTS.items():
            action = action.append(name, dspy.OutputField(desc=desc), type_=str)
        extract = dspy.Signature({**self.signature.output_fields},
                                 f"{self.signature.instructions}\n\n{EXTRACT_INSTRUCTIONS}".strip())
        extract = extract.prepend("repl_history", dspy.InputField(desc=ACTION_INPUTS["repl_history"]),
                                  type_=REPLHistory)
        extract = extract.prepend("variables_info", dspy.InputField(desc=ACTION_INPUTS["variables_info"]), type_=str)
        return action, extract

    def _action_signature_for_current_factory(self, factory: Callable[[], Any], sub_agent_rules: str) -> Any:
        current = getattr(self.generate_action, "signature", self._action_signature)
        rules = self._get_execution_instructions(factory)
        extra = getattr(factory, "run_instructions", "") or ""
        initial = self._initial_execution_instructions
        if (not extra and rules == initial) or not isinstance(extra, str):
            return current
        key = (id(current), rules, extra)
        with self._per_run_lock:
            cached = self._per_run.get(key)
        if cached is not None and cached[0] is current:
            return cached[1]
        text = current.instructions
        if rules != initial and initial and initial in text:
            text = text.replace(initial, rules, 1)
        if extra.strip():
            text = f"{text}\n\n{extra.strip()}"
        signature = current.with_instructions(text)
        with self._per_run_lock:
            if len(self._per_run) > 16:
                self._per_run.clear()
            self._per_run[key] = (current, signature)
        return signature

    def _build_variables(self, **input_args: Any) -> list[Any]:
        return [Rendered(self._render_inputs(input_args))]

    def _make_llm_tools(self, budget: Any = None, max_workers: int = 8) -> dict[str, Callable[..., Any]]:
        """RLM's own ``llm_query`` tools (its call budget, its batch threads) over a `QueryLM`: DSPy's builder reads
        ``max_llm_calls`` and ``sub_lm`` of what it is given (`tests/core/test_dspy_contract.py`)."""
        view = SimpleNamespace(max_llm_calls=self.max_llm_calls, sub_lm=QueryLM(self.sub_lm, self._through))
        return dspy.RLM._make_llm_tools(view, budget, max_workers)
