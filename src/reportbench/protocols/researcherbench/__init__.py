"""ResearcherBench protocol (Xu et al., arXiv 2507.16280): weighted rubric coverage, faithfulness, groundedness.

- `release`: importer for the authors' layout (questions.json + rubric.json) and the synthetic demo.
- `tasks`: judge tasks (rubric coverage, claim extraction, claim verification) with strict parsers and
  offline rules; `metrics`: the arithmetic and every paper-vs-code mode; `benchmark`: BENCHMARK (the spine's
  view); `responses`: the authors' response files as a system kind; `metaeval`: judge-vs-human agreement.
"""

from reportbench.judges.tasks import register_task
from reportbench.metrics.registry import register_metric
from reportbench.protocols.researcherbench import responses as _responses  # noqa: F401  (registers the kind)
from reportbench.protocols.researcherbench.tasks import TASKS

for _task in TASKS:
    register_task(_task)

from reportbench.protocols.researcherbench.benchmark import BENCHMARK, METRICS  # noqa: E402

for _spec in METRICS:
    register_metric(_spec)

__all__ = ["BENCHMARK", "METRICS"]
