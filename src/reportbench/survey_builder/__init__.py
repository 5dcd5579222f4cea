"""Live ResearchQA-style release builder: recent surveys (OpenAlex + arXiv LaTeX) -> sections -> queries with
reference answers -> hybrid rubrics -> splits and a release the ResearchQA benchmark evaluates.

Stages: `reportbench.survey_builder.stages` (run by `pipelines/researchqa_survey/dvc.yaml`); docs/researchqa-builder.md.
Every generator/filter prompt (`prompts/survey_builder/`) is our reconstruction of the paper's description.
"""
