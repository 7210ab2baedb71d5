"""``determined.common.util``: the metric group names that generic-metrics code uses."""

from harness.core._train import GROUP_INFERENCE as _INFERENCE
from harness.core._train import GROUP_TRAINING as _LEGACY_TRAINING
from harness.core._train import GROUP_VALIDATION as _LEGACY_VALIDATION

__all__ = ["_INFERENCE", "_LEGACY_TRAINING", "_LEGACY_VALIDATION"]
