"""datatrove ``PipelineStep``s, one concern each."""

from assay import _depcheck

# datatrove's per-step dependency check without parsing every installed package's metadata; installed here, where
# datatrove is imported anyway (every step module imports it), not by ``import assay``: ``assay.classifiers``
# stays free of datatrove
_depcheck.install()
