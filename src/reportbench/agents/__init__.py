"""Deep-research agents as system kinds (docs/agents.md): the contract (`protocol`), pluggable search (`search`),
isolated environments (`envs`), the loopback budget and search proxy (`proxy`) and the stage runner (`runner`),
which registers the agent kinds. Layer: systems (docs/architecture.md §11)."""
