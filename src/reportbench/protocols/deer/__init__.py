"""DEER (arXiv 2512.17776, code hanjanghoon/DEER f81bd9c): expert-report rubric scoring with the Expert
Evaluation Guidance, the information-verification module (IVM) and score integration.

- `rubric`: the 101 factors (ids, C/Q, hierarchy) and the five judge calls.
- `scoring`: aggregation, raw fact-check metrics, 0-10 normalisation, integration (spec §2).
- `ivm`: reference split/map, segmentation, back-tracking, context retrieval (spec §2.2).
- `tasks`: the judge tasks (typed, strict parsers, offline rules), registered on import.
- `release`: the importer for a user's copy and the synthetic demo; `benchmark`: `BENCHMARK`.
"""

from reportbench.judges.tasks import register_task
from reportbench.protocols.deer.tasks import TASKS

for _task in TASKS:
    register_task(_task)

from reportbench.protocols.deer.benchmark import BENCHMARK, METRIC_NAMES  # noqa: E402  (after the tasks)

__all__ = ["BENCHMARK", "METRIC_NAMES"]
