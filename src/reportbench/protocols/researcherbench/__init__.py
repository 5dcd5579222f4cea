"""ResearcherBench protocol (Xu et al., arXiv 2507.16280): weighted rubric coverage, faithfulness, groundedness."""
