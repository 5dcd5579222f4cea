"""Adapter scripts: each runs as `<python> adapters/<kind>.py` with an AgentRequest JSON on stdin and prints one
AgentResult JSON line on stdout (docs/agents.md §4). They never import reportbench (they run in the agent's venv)."""
