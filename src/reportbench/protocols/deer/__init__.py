"""DEER (arXiv 2512.17776, code hanjanghoon/DEER f81bd9c): expert-report rubric scoring with the Expert
Evaluation Guidance, the information-verification module (IVM) and score integration.

- `rubric`: the 101 factors (ids, C/Q, hierarchy) and the five judge calls.
- `scoring`: aggregation, raw fact-check metrics, 0-10 normalisation, integration (spec §2).
"""
