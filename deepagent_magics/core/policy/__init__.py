"""The policy room: what the user decides about a run tree: spend caps (`spend`), approval of risky
code (`approval`, with the rules in `risk` and `risk_tables`), steering while it works (`steering`),
and taking a run back (`undo`, over the `fingerprint`s of what it changed). Imports the run and
workspace rooms below it."""
