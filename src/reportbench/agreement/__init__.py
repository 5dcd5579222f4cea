"""Judge validity: agreement between judges (and with human labels), self-consistency, the judge card.

Library behind the `agreement@<benchmark>` stage (stages/agreement.py) and `reportbench annotate`;
docs/agreement.md describes the figures, the human-label CSV and the annotation page.
"""
