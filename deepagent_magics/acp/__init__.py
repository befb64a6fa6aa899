"""The deep agent as an ACP agent: ``deepagent acp`` speaks the Agent Client Protocol over stdio.

Editors and chat panels that speak ACP (jupyter-ai's chat, Zed, ...) start it as a subprocess and
talk to it with the protocol's requests; it is built on the ``agent-client-protocol`` package (the
``acp`` extra). Each session's prompts are ``%%deepagent`` cells run in one place: a notebook's live
kernel when the chat belongs to one, else a kernel of the session's own (`places`); what the run
does reaches the client as ACP's own updates (`updates`). See docs/clients.md.

- `protocol`: the protocol's requests, and `protocol.serve` (stdio);
- `sessions`: one conversation, its turns, approvals as permission requests, ``session/load``;
- `updates`: a run's events as ``session/update``s;
- `prompt_text`: a prompt's blocks as the task;
- `places`, `notebook_kernel`, `own_kernel`: where a session's code runs (a notebook's kernel, or its own);
- `options`: what `deepagent acp` was started with.
"""
