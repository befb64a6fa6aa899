"""The model room: everything about one call to a language model: which LM (`lm`; ``local`` is a
llama.cpp server in this process, `local_server`, serving verified weights, `local_weights`), the sandbox
facade's requests (`facade_requests`), prompt caching (`caching`), replies a real model sends
(`replies`), provider retries (`retries`), streaming a step or a query while it is written
(`streaming`), compaction of a long history (`compaction`) and why a run
failed (`failures`). Imports the policy, run and workspace rooms below it."""

from ..._compat import old_paths

__path__ = old_paths(__path__)  # core.model.step_streaming and query_streaming: now streaming
