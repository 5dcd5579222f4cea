"""Why no adapter recognises an output: one precise reason instead of "no adapter recognises this output".

The code lives in reports/base.py (load_report calls it and it uses base's readers); this name stays importable.
"""

from reportbench.reports.base import JSON_EXPECTED, KNOWN_LAYOUTS, diagnose

__all__ = ["JSON_EXPECTED", "KNOWN_LAYOUTS", "diagnose"]
