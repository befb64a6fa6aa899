"""docs/magics.md lists every flag of every magic the extension registers."""

from __future__ import annotations

from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs" / "magics.md"


def test_every_magic_and_flag_is_documented(ip):
    text = DOCS.read_text()
    missing = []
    for table in ip.magics_manager.magics.values():
        for name, function in table.items():
            if not name.startswith("deepagent"):
                continue
            if f"%{name}" not in text:
                missing.append(f"%{name}")
            parser = getattr(function, "parser", None)
            for action in parser._actions if parser else []:
                for option in action.option_strings:
                    if option.startswith("--") and option != "--help" and option not in text:
                        missing.append(f"%{name} {option}")
    assert not missing, f"undocumented in docs/magics.md: {missing}"
