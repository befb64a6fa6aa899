"""What a magic reads from its line and cell, one module per kind of input, each checked before anything
runs or is stored, a mistake being exactly one `UsageError` line (`flags`).

- `flags`: the line split as a shell would and parsed; a mistake, or a `UserError` from below, as one line
- `interpolation`: ``{name}`` in a cell replaced by the notebook's value
- `out_name`: a variable name a result can be stored in (``--out``)
- `folders`: a workspace folder (``--workspace``), paths with ``~``
- `connections`: what is checked by reaching it now: a kernel spec (``--kernel-name``), MCP servers (``--mcp``)
- `lm_option_flags`: ``--lm-option KEY=VALUE`` values, and how the settings list shows them
- `approval_flags`: ``--approve`` (a policy, or a notebook function) and ``--approve-rules``
"""
