"""Runtime checks: approval that sees what the agent's code does, and the LM calls it makes itself.

`hook` (an audit hook) and `actions` (what each audit event means) are standard library only and
also run inside sub-agent kernels; `host` decides which of the root's steps are watched and asks
the user through `core.policy.approval`; `lm_calls` admits and counts LM calls the agent's code
makes itself (``lm("...")`` from any of its threads) against the run tree's spend caps; `deferred`
finds what the agent's code left to run later, outside every step, and removes it at the end of a run
under approval.
"""
