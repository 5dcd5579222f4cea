"""The agent contract: what an agent system entry says, what an adapter gets on stdin and must print on stdout.

One module, typed, imported by the runner (reportbench's own environment) and readable by the adapters (which run
in the agent's own venv and must NOT import reportbench: they copy the two JSON shapes below, documented in
docs/agents.md). Everything here is a pure data definition: no network, no heavy imports.

    my_storm:                                  # conf/<b>/systems/agents.yaml
      kind: storm                              # storm | open_deep_research | gpt_researcher |
                                               # smolagents_deep_research | search_llm | provider_deep_research
      path: src/reportbench/agents             # DVC dependency: the agent code (default)
      model: openai/gpt-4.1-mini               # litellm model string; api_base / api_key_env as for `endpoint`
      search: {backend: bm25, max_results: 5}  # bm25 (offline default) | tavily | exa | arxiv | openalex
      budget: {llm_calls: 40, search_calls: 20, tokens: 400000, usd: 2.0, wall_s: 900}
      concurrency: 2
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# kinds that run in their own venv (`reportbench agents install <kind>`), through adapters/<kind>.py
VENV_KINDS = ("storm", "open_deep_research", "gpt_researcher", "smolagents_deep_research")
# kinds that run in reportbench's own environment (no install step)
BUILTIN_KINDS = ("search_llm", "provider_deep_research")
AGENT_KINDS = (*VENV_KINDS, *BUILTIN_KINDS)
SEARCH_BACKENDS = ("bm25", "tavily", "exa", "arxiv", "openalex")
AGENTS_HOME = ".reportbench/agents"  # <kind>/venv, <kind>/lock.txt, runs/ (resumable per-task results)
# the API key environment variables an adapter receives (set to per-task proxy tokens, never to a real key)
LLM_TOKEN_ENV = "REPORTBENCH_AGENT_LLM_KEY"
SEARCH_TOKEN_ENV = "REPORTBENCH_AGENT_SEARCH_KEY"
Outcome = Literal["ok", "failed", "over_budget"]


def lock_path(kind: str) -> str:
    """The environment lock of a venv kind (pip freeze), a DVC dependency of that kind's system stages."""
    return f"{AGENTS_HOME}/{kind}/lock.txt"


def adapter_path(kind: str) -> str:
    """The adapter script run with the kind's venv python (relative to the repository root)."""
    return f"src/reportbench/agents/adapters/{kind}.py"


def requirements_path(kind: str) -> str:
    return f"src/reportbench/agents/requirements/{kind}.txt"


# ----------------------------------------------------------------------------------------- system config
class Budget(BaseModel):
    """Per-task limits, enforced outside the agent (the loopback proxies and the runner). None = no limit."""

    model_config = ConfigDict(extra="forbid")

    llm_calls: int | None = Field(default=None, ge=1)
    search_calls: int | None = Field(default=None, ge=0)
    tokens: int | None = Field(default=None, ge=1)  # prompt + completion, summed over the task's calls
    usd: float | None = Field(default=None, gt=0)
    wall_s: float = Field(default=1800.0, gt=0)  # the adapter process is killed after this


class Price(BaseModel):
    """Dollars per million tokens, for models litellm's price map does not know (self-hosted, the stub)."""

    model_config = ConfigDict(extra="forbid")

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)


class SearchConfig(BaseModel):
    """Which backend the search proxy forwards to. Keys come from `api_key_env` (backend default otherwise)."""

    model_config = ConfigDict(extra="forbid")

    backend: Literal["bm25", "tavily", "exa", "arxiv", "openalex"] = "bm25"
    max_results: int = Field(default=5, ge=1, le=50)
    api_base: str | None = None  # tavily/exa: another compatible server (the loopback stub in tests)
    api_key_env: str | None = None
    requests_per_minute: float | None = Field(default=None, gt=0)
    timeout_s: float = Field(default=30.0, gt=0)


class AgentSystemConfig(BaseModel):
    """One agent system entry (`benchmarks.<b>.systems.<S>` or `agents.<S>`), validated with field names."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal[
        "storm",
        "open_deep_research",
        "gpt_researcher",
        "smolagents_deep_research",
        "search_llm",
        "provider_deep_research",
    ]
    path: str | None = None
    model: str
    api_base: str | None = None
    api_key_env: str | None = None
    price: Price | None = None
    search: SearchConfig = Field(default_factory=SearchConfig)
    budget: Budget = Field(default_factory=Budget)
    concurrency: int = Field(default=2, ge=1, le=64)
    options: dict[str, Any] = Field(default_factory=dict)  # kind-specific knobs, passed to the adapter as is
    format: str = "markdown"
    sandbox: str | dict[str, Any] | None = None  # bwrap (default) | none | limits (reportbench.systems.sandbox)
    # set by the pipeline
    release_dir: str | None = None
    benchmark: str | None = None

    @field_validator("api_key_env")
    @classmethod
    def _env_name(cls, v: str | None) -> str | None:
        if v is not None and not v.replace("_", "").isalnum():
            raise ValueError(f"{v!r} must be the NAME of an environment variable, not a key")
        return v


# ------------------------------------------------------------------------------------ adapter protocol
class LLMEndpoint(BaseModel):
    """An OpenAI-compatible endpoint (our budget proxy). `api_key_env` names the variable holding the token."""

    model: str  # pass it as the model name to an OpenAI-compatible client
    base_url: str  # e.g. http://127.0.0.1:PORT/v1
    api_key_env: str = LLM_TOKEN_ENV


class SearchEndpoint(BaseModel):
    """Our search proxy: Tavily-compatible at `base_url` (POST /search), Exa-compatible at `exa_base_url`."""

    backend: str  # the real backend behind the proxy (for the record; the adapter needs not care)
    base_url: str  # Tavily API base, e.g. http://127.0.0.1:PORT/tavily  (TavilyClient(api_base_url=...))
    exa_base_url: str  # Exa API base, e.g. http://127.0.0.1:PORT/exa    (Exa(base_url=...))
    api_key_env: str = SEARCH_TOKEN_ENV
    max_results: int = 5


class AgentRequest(BaseModel):
    """One JSON object on the adapter's stdin."""

    task_id: str
    benchmark: str
    question: str  # the benchmark's exact task prompt
    title: str = ""  # the task's title when the benchmark has one (a short search query; may be empty)
    llm: LLMEndpoint
    search: SearchEndpoint
    budget: Budget
    workdir: str  # a fresh scratch folder for this task (the adapter may write anything there)
    options: dict[str, Any] = Field(default_factory=dict)


class Reference(BaseModel):
    n: int = Field(ge=1)
    url: str
    title: str = ""


class AgentResult(BaseModel):
    """One JSON object on the adapter's stdout (the last non-empty line that parses; logs go to stderr)."""

    report_markdown: str = ""
    references: list[Reference] = Field(default_factory=list)  # [n] markers in the report resolve through these
    queries: list[str] = Field(default_factory=list)
    pages_read: list[str] = Field(default_factory=list)
    agent_version: str = ""
    models: list[str] = Field(default_factory=list)
    outcome: Outcome = "ok"
    reason: str | None = None


# ---------------------------------------------------------------------------------- the per-task record
class Usage(BaseModel):
    """What the proxies counted for one task (the same for every kind)."""

    llm_calls: int = 0
    llm_refused: int = 0
    llm_capped: int = 0  # calls whose max_tokens / n the proxy lowered to what was left of the budget
    embedding_calls: int = 0  # POST /embeddings through the proxy (their tokens count towards `tokens`/`usd`)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usd: float | None = 0.0  # None: some call's price is unknown (shown as "—", never as 0)
    search_calls: int = 0  # requests the agent made to the search proxy
    search_requests: int = 0  # of those, requests that reached the backend (the rest came from the cache)
    search_refused: int = 0
    # result pages an agent asked the search proxy for (Tavily `include_raw_content`, Exa `contents`): those whose
    # main text it received (from the backend, the release's recorded pages, the page cache or the guarded fetcher)
    # and those it could not be given (offline and never recorded, refused, an HTTP error: `raw_content` null)
    pages_fetched: int = 0
    pages_unread: int = 0
    wall_s: float = 0.0


class TaskRecord(BaseModel):
    """`<run>/agent/<task_id>.json`: everything recorded about one agent task."""

    task_id: str
    system: str
    kind: str
    agent_version: str = ""
    models: list[str] = Field(default_factory=list)
    search_backend: str = ""
    queries: list[str] = Field(default_factory=list)
    pages_read: list[str] = Field(default_factory=list)  # as the adapter reports them
    # what the search proxy answered for page text: [{url, source, text_chars | why}] (source: provider, seed,
    # cache, fetched, not_fetched, refused_static)
    pages_fetched: list[dict[str, Any]] = Field(default_factory=list)
    variant: str | None = None  # how this system departs from the agent as published (agents.variant)
    usage: Usage = Field(default_factory=Usage)
    outcome: Outcome
    reason: str | None = None
    report_file: str | None = None  # raw/<task>.md (or .json for provider-native output)
    config_hash: str = ""


def references_section(markdown: str, refs: list[Reference]) -> str:
    """The report with a `## References` list of `[n] title. url` lines appended when it has none."""
    body = markdown.rstrip()
    lowered = body.lower()
    if not refs or "\n## references" in lowered or "\n# references" in lowered or lowered.startswith("## references"):
        return body + "\n"
    lines = [
        f"[{r.n}] {' '.join((r.title or r.url).split()).rstrip('.')}. {r.url}" for r in sorted(refs, key=lambda r: r.n)
    ]
    return body + "\n\n## References\n\n" + "\n".join(lines) + "\n"
