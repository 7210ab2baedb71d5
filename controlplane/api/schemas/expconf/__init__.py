"""Determined 0.38.1 experiment config ("expconf"): parse, validate, merge, expand.

Typical flow on experiment creation::

    data, lines = load_yaml_mapping(yaml_text)
    data = apply_overrides(data, overrides)            # CLI --config key=value (client side)
    data = merge_configs(data, template_data)          # when a template is named
    data = with_cluster_checkpoint_storage(data, master_storage)  # a partial block: over it
    cfg = validate_experiment_config(data, lines)      # raises ExperimentConfigError
    expanded = expand_config(cfg, master_checkpoint_storage=..., now_seconds=...)
"""

from .errors import ConfigIssue, ExperimentConfigError, LineMap
from .expand import expand_config
from .merge import merge_checkpoint_storage, merge_configs, with_cluster_checkpoint_storage
from .models_base import BindMount, Device, Length
from .models_environment import (
    DEFAULT_IMAGE,
    EnvironmentConfig,
    EnvironmentImage,
    EnvironmentVariables,
    ProxyPort,
    RegistryAuth,
    ResourcesConfig,
)
from .models_experiment import (
    ExperimentConfig,
    OptimizationsConfig,
    ProfilingConfig,
    ReproducibilityConfig,
    RetentionPolicyConfig,
)
from .models_hparams import (
    CategoricalHyperparameter,
    ConstHyperparameter,
    DoubleHyperparameter,
    Hyperparameter,
    IntHyperparameter,
    LogHyperparameter,
)
from .models_searcher import (
    REMOVED_SEARCHERS,
    SEARCHER_NAMES,
    AdaptiveAshaSearcher,
    AsyncHalvingSearcher,
    GridSearcher,
    RandomSearcher,
    RunnableSearcher,
    SearcherConfig,
    SingleSearcher,
    TpeSearcher,
)
from .models_storage import (
    STORAGE_TYPES,
    AzureStorage,
    CheckpointStorageConfig,
    DirectoryStorage,
    GCSStorage,
    S3Storage,
    SharedFSStorage,
)
from .overrides import apply_overrides
from .validate import validate_experiment_config
from .yaml_source import MAX_CONFIG_BYTES, load_yaml_mapping

__all__ = [
    "DEFAULT_IMAGE",
    "MAX_CONFIG_BYTES",
    "REMOVED_SEARCHERS",
    "SEARCHER_NAMES",
    "STORAGE_TYPES",
    "AdaptiveAshaSearcher",
    "AsyncHalvingSearcher",
    "AzureStorage",
    "BindMount",
    "CategoricalHyperparameter",
    "CheckpointStorageConfig",
    "ConfigIssue",
    "ConstHyperparameter",
    "Device",
    "DirectoryStorage",
    "DoubleHyperparameter",
    "EnvironmentConfig",
    "EnvironmentImage",
    "EnvironmentVariables",
    "ExperimentConfig",
    "ExperimentConfigError",
    "GCSStorage",
    "GridSearcher",
    "Hyperparameter",
    "IntHyperparameter",
    "Length",
    "LineMap",
    "LogHyperparameter",
    "OptimizationsConfig",
    "ProfilingConfig",
    "ProxyPort",
    "RandomSearcher",
    "RegistryAuth",
    "ReproducibilityConfig",
    "ResourcesConfig",
    "RetentionPolicyConfig",
    "RunnableSearcher",
    "S3Storage",
    "SearcherConfig",
    "SharedFSStorage",
    "SingleSearcher",
    "TpeSearcher",
    "apply_overrides",
    "expand_config",
    "load_yaml_mapping",
    "merge_checkpoint_storage",
    "merge_configs",
    "validate_experiment_config",
    "with_cluster_checkpoint_storage",
]
