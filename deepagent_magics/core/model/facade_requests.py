"""The sandbox facade's LM calls as DSPy 3.4 wants them: ``lm(dspy.lm15.Request(...))``, not ``messages=``.

Agent code may build ``dspy.Predict(...)`` through DSPy's sandbox facade (in a sub-agent's
kernel, or in the root's REPL); DSPy runs that predictor on the host (``FacadeInvocation.call``,
the ``__dspy_call__`` tool) on a ``SandboxLM`` over the host LM. DSPy's adapter calls the
SandboxLM with ``messages=`` (a call DSPy marks as its own), and the SandboxLM passes the same
``messages=`` on to the host LM: DSPy 3.4.1 warns about that call as deprecated (removed in 3.5).

`facade_requests(tool)` wraps that one tool so the host LM the facade uses is a `RequestLM`:
the SandboxLM calls it, and it calls the host LM with a ``dspy.lm15.Request`` built the way DSPy
builds one for its own native engine (the chat body of the LM's generation settings and the
call's, through ``dspy.lm15.request_from_openai_chat``), then turns the ``Response`` back into the
outputs the adapter reads (DSPy's ``legacy_output``). Everything else reads through to the LM.

Every call a `RequestLM` makes is a `calls.FACADE` call through the pipeline it is handed
(`core.loop.pipeline`), whose spend admission admits it on its own by the run tree's caps (the session
the tool runs in: `core.policy.spend`): a facade-built ``dspy.ReAct`` or ``RLM`` makes one LM call per
iteration, and each must fit, as the agent's own steps must.

Kept on the old ``messages=`` call, because a Request cannot carry it: ``n`` > 1 completions (an
explicit Request returns exactly one Response), a text-completion model (a Request is a chat), an
LM that is not a DSPy ``BaseLM`` with an engine (a plain callable has no Request form), and
messages lm15 cannot read (then DSPy's own call reports what is wrong).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pydantic
from dspy.clients.base_lm import BaseLM
from dspy.lm15 import Request, request_from_openai_chat
from dspy.primitives.facade import FacadeInvocation, SandboxLM

from ..run import session as _session
from .calls import FACADE, ModelCall, Through, plain

try:  # where DSPy 3.4 keeps them; without them a pydantic response format keeps the old call
    from dspy.clients.backend_selection import CLIENT_KEYS
    from dspy.clients.call_result import legacy_output
    from dspy.clients.legacy_requests import _strict_json_schema
except ImportError:  # pragma: no cover - another DSPy
    CLIENT_KEYS = {"api_key", "api_base", "base_url", "headers", "extra_headers", "timeout", "api_version",
                   "azure_ad_token_provider", "organization", "project", "extra_query", "custom_llm_provider"}
    legacy_output = None  # type: ignore[assignment]
    _strict_json_schema = None  # type: ignore[assignment]

CALL_OPTIONS = ("cache", "rollout_id")  # what a Request call takes besides the Request
NOT_IN_BODY = set(CLIENT_KEYS) | {"n", "rollout_id", "num_generations", "prompt_cache", "cache"}


class RequestLM:
    """The host LM for the facade: a ``messages=`` call goes out as a ``Request``; the rest reads through."""

    def __init__(self, lm: Any, through: Through = plain):
        self._lm = lm
        self._through = through

    def __getattr__(self, name: str) -> Any:  # model, model_type, kwargs, supports_*, history, ...
        return getattr(self._lm, name)

    def __call__(self, prompt: Any = None, *args: Any, messages: Any = None, **kwargs: Any) -> Any:
        call = ModelCall(None, _session.active(), {}, self._lm, False, FACADE)
        return self._through(call, self._call)(prompt, *args, messages=messages, **kwargs)

    async def acall(self, prompt: Any = None, *args: Any, messages: Any = None, **kwargs: Any) -> Any:
        call = ModelCall(None, _session.active(), {}, self._lm, True, FACADE)
        return await self._through(call, self._acall)(prompt, *args, messages=messages, **kwargs)

    def _call(self, prompt: Any = None, *args: Any, messages: Any = None, **kwargs: Any) -> Any:
        request = None if prompt is not None or args else self._request(messages, kwargs)
        if request is None:
            return self._lm(prompt, *args, messages=messages, **kwargs) if messages is not None \
                else self._lm(prompt, *args, **kwargs)
        options = {key: kwargs[key] for key in CALL_OPTIONS if kwargs.get(key) is not None}
        return self._outputs(self._lm(request, **options), request)

    async def _acall(self, prompt: Any = None, *args: Any, messages: Any = None, **kwargs: Any) -> Any:
        request = None if prompt is not None or args else self._request(messages, kwargs)
        if request is None:
            return await (self._lm.acall(prompt, *args, messages=messages, **kwargs) if messages is not None
                          else self._lm.acall(prompt, *args, **kwargs))
        options = {key: kwargs[key] for key in CALL_OPTIONS if kwargs.get(key) is not None}
        return self._outputs(await self._lm.acall(request, **options), request)

    def copy(self, **kwargs: Any) -> "RequestLM":
        return RequestLM(self._lm.copy(**kwargs), self._through)

    # ------------------------------------------------------------------ building
    def _request(self, messages: Any, kwargs: dict[str, Any]) -> Request | None:
        """The Request DSPy's own engine would send for this call, or None to keep the old call."""
        lm = self._lm
        if messages is None or legacy_output is None or not isinstance(lm, BaseLM) or not hasattr(lm, "_engine_spec"):
            return None
        if getattr(lm, "model_type", "chat") not in ("chat", "responses"):
            return None
        merged = {**(getattr(lm, "kwargs", None) or {}), **kwargs}
        if (merged.get("n") or 1) != 1 or (merged.get("num_generations") or 1) != 1:
            return None
        body = {key: value for key, value in merged.items() if key not in NOT_IN_BODY and value is not None}
        format_ = body.get("response_format")
        if isinstance(format_, type) and issubclass(format_, pydantic.BaseModel):
            if _strict_json_schema is None:
                return None
            body["response_format"] = {"type": "json_schema", "json_schema": {
                "name": format_.__name__, "schema": _strict_json_schema(format_.model_json_schema()), "strict": True}}
        if getattr(lm, "use_developer_role", False) and lm.model_type == "responses":
            messages = [{**m, "role": "developer"} if isinstance(m, dict) and m.get("role") == "system" else m
                        for m in messages]
        try:
            request = request_from_openai_chat({"model": lm.model, "messages": messages, **body})
            if merged.get("prompt_cache") is not None:
                request = dataclasses.replace(request, config=dataclasses.replace(request.config,
                                                                                  cache=merged["prompt_cache"]))
        except Exception:  # lm15 cannot read these messages: DSPy's own call says what is wrong
            return None
        return request

    def _outputs(self, response: Any, request: Request) -> list[Any]:
        """The Response as the outputs a ``messages=`` call returns (what the adapter parses)."""
        output = legacy_output(response, logprobs=request.config.logprobs is not None)
        return [output] if self._lm.model_type == "responses" or len(output) > 1 else [output["text"]]


def facade_requests(tool: Callable[..., Any], through: Through = plain) -> Callable[..., Any]:
    """``tool``, or for DSPy's facade call tool (``FacadeInvocation.call``) the same call with its LM a `RequestLM`
    whose calls go ``through`` the pipeline (a cap reached: `spend.CapReached`, which the agent's code reads)."""
    invocation = getattr(tool, "__self__", None)
    if not isinstance(invocation, FacadeInvocation) or getattr(tool, "__func__", None) is not FacadeInvocation.call:
        return tool
    if not hasattr(invocation, "_lm"):  # another DSPy: leave its facade as it is
        return tool

    def call(*args: Any, **kwargs: Any) -> Any:
        import dspy

        host = invocation._lm
        if host is not None:  # the facade was given its LM (RLM's sub_lm): it uses that one
            if not isinstance(host, (RequestLM, SandboxLM)):
                invocation._lm = RequestLM(host, through)
            return tool(*args, **kwargs)
        current = dspy.settings.lm
        if current is None or isinstance(current, (RequestLM, SandboxLM)):
            return tool(*args, **kwargs)
        with dspy.context(lm=RequestLM(current, through)):  # the facade reads dspy.settings.lm at call time
            return tool(*args, **kwargs)

    call.__name__ = getattr(tool, "__name__", "call")
    call.__doc__ = getattr(tool, "__doc__", None)
    try:
        import inspect

        call.__signature__ = inspect.signature(tool)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        pass
    return call
