"""litellm, imported once per process and quieted, on the first real call only (the import costs ~3.5 s; a
fully cached rerun or the offline backend never pays it). Below the client and the fatal-error classifier,
which both need it (errors.key_env_names asks litellm which variable holds a key)."""

from __future__ import annotations

import logging
import os
import warnings
from types import ModuleType

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_MODE", "PRODUCTION")
os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")  # never fetch Anthropic's beta-header map

_LITELLM: ModuleType | None = None


def _drop_loop_change_notice(record: logging.LogRecord) -> bool:
    """litellm warns each time a new event loop is used (every sync-wrapper run); that is expected here."""
    return "event loop changed" not in record.getMessage()


def _litellm() -> ModuleType:
    """Import and quiet litellm once per process (env switches are set at module import above)."""
    global _LITELLM
    if _LITELLM is None:
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        litellm.turn_off_message_logging = True
        lite_log = logging.getLogger("LiteLLM")
        lite_log.setLevel(logging.WARNING)
        lite_log.addFilter(_drop_loop_change_notice)
        # Cancelling an in-flight call (a stage stopping on a fatal error) leaves litellm's inner
        # provider coroutine un-awaited; Python then warns at garbage collection. Expected, harmless.
        warnings.filterwarnings(
            "ignore", message=r"coroutine '\w+\.acompletion' was never awaited", category=RuntimeWarning
        )
        _LITELLM = litellm
    return _LITELLM
