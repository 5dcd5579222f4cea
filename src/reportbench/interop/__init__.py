"""The benchmark authors' artefacts in and out: importers of their released judgments and result files, and
exporters writing our results in their formats (so a user can diff against their scripts or submit). Each
module names the authors' format it reads or writes; fixtures in tests/fixtures/interop/ are self-authored."""
