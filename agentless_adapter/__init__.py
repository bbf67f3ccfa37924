"""Everything Agentless-specific: blagent (or any `blagent.FileLocalizer`) as Agentless's
file-level stage, with Agentless's own later stages run on its output, unmodified.

- `loc_format`: the `loc_outputs.jsonl` line Agentless reads (`to_loc_line`, `contract_problems`).
- `proxy`: serves an OpenAI-compatible endpoint under a model name Agentless accepts.
- `offline`: Agentless's dataset and repository structures from local files, no network.
- `scripted_server`: a canned OpenAI-compatible server for tests and rehearsals.

`proxy` and `offline` import nothing from the other modules, and only `loc_format` imports
`blagent`, so that `proxy` and `offline` run with Agentless's own Python (the others reuse
`offline`'s bounded reads). See docs/agentless.md.
"""
