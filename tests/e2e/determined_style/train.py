"""Determined 0.38's Trainer API, unchanged: started by
`python3 -m determined.launch.torch_distributed python3 train.py`."""

import logging

import determined as det
from determined import pytorch
from model_def import LinearTrial


def main() -> None:
    info = det.get_cluster_info()
    assert info is not None, "this example only runs on-cluster"
    distributed = det.core.DistributedContext.from_torch_distributed()
    print(f"determined from {det.__file__}; rank {distributed.rank} of {distributed.size}")
    with pytorch.init(distributed=distributed) as train_context:
        trial = LinearTrial(train_context)
        trainer = pytorch.Trainer(trial, train_context)
        trainer.fit(
            max_length=pytorch.Batch(int(info.trial.hparams["batches"])),
            checkpoint_period=pytorch.Batch(10),
            validation_period=pytorch.Batch(10),
            latest_checkpoint=info.latest_checkpoint,
        )


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    main()
