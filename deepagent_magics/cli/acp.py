"""``deepagent acp``: the agent over the Agent Client Protocol on stdio (the `acp` room; docs/clients.md).

The command line checks what it can before serving (a model that cannot be had is one line and exit
status 2): ``--lm`` (else ``DEEPAGENT_LM``) is a model id or ``local``, handed to each prompt's cell,
or ``scripted:FILE.json``, which a kernel of the session's own is set up with (a notebook's kernel
keeps the notebook's model: a script is for tests).
"""

from __future__ import annotations

import argparse
import asyncio
import os
from pathlib import Path

from ..core.model.local_server import is_local
from .models import SCRIPTED, model_from_spec
from .parser import UsageProblem


def serve_acp(args: argparse.Namespace) -> int:
    try:
        from ..acp.protocol import serve
        from ..acp.options import FLAGS, Options
    except ImportError as exc:
        raise UsageProblem(f"deepagent acp needs the ACP SDK: pip install 'deepagent-magics[acp]' ({exc})") from None
    spec = (args.lm or os.environ.get("DEEPAGENT_LM", "")).strip() or None
    lm_flag, setup = spec, ""
    if spec is not None and spec.startswith(SCRIPTED):
        path = Path(spec[len(SCRIPTED):]).expanduser().resolve()
        model_from_spec(f"{SCRIPTED}{path}")  # a script that cannot be read: one line, before anything starts
        lm_flag, setup = None, ("__import__('dspy').configure(lm=__import__('deepagent_magics.cli.models', "
                                f"fromlist=['model_from_spec']).model_from_spec({f'{SCRIPTED}{path}'!r}))")
    elif spec is not None and not is_local(spec):
        model_from_spec(spec)  # a model id's shape, checked here
    if args.sub_lm and args.sub_lm.strip().startswith(SCRIPTED):
        raise UsageProblem("--sub-lm: a scripted model is not handed to a kernel; name a model id")
    workspace = Path(args.workspace).expanduser().resolve() if args.workspace else None
    if workspace is not None and not workspace.is_dir():
        raise UsageProblem(f"--workspace {args.workspace}: not a directory")
    options = Options(settings={name: getattr(args, name) for name in FLAGS}, lm_flag=lm_flag, lm_setup=setup,
                      workspace=workspace)
    asyncio.run(serve(options))
    return 0
