"""ResearchQA (Li, Chang, Malaviya, Yatskar; realliyifei/ResearchQA): rubric coverage over 75 fields plus a
pairwise-judged tournament rated with Bradley–Terry (Elo scale). See docs/researchqa.md.

Importing the package registers its judge tasks and metrics and exports `BENCHMARK`.
"""

from reportbench.judges.tasks import register_task
from reportbench.protocols.researchqa.tasks import TASKS

for _task in TASKS:
    register_task(_task)

from reportbench.protocols.researchqa.benchmark import BENCHMARK, METRIC_NAMES, register_metrics  # noqa: E402

register_metrics()

__all__ = ["BENCHMARK", "METRIC_NAMES"]
