"""s3 checkpoint storage (boto3, imported only when an s3 storage is built).

Config keys as in Determined: ``bucket`` (required), ``prefix``, ``endpoint_url`` (MinIO, moto,
other S3-compatible stores), ``access_key``/``secret_key`` (otherwise boto3's own credential
chain). Files go up with ``upload_file`` and come down with ``download_file``: boto3's transfer
manager streams them, in parallel multipart parts above ``MULTIPART_THRESHOLD``. botocore
retries throttling, connection errors and 5xx answers (``standard`` mode, 5 attempts); what is
left is raised as a StorageError naming the bucket.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import botocore.config
import botocore.exceptions
from boto3.exceptions import Boto3Error
from boto3.s3.transfer import TransferConfig

from harness.core._storage import StorageError
from harness.core._storage_cloud import CloudStorageManager

_ERRORS = (Boto3Error, botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError)
MiB = 1024 * 1024
MULTIPART_THRESHOLD = 64 * MiB
MULTIPART_CHUNKSIZE = 64 * MiB
MAX_CONCURRENCY = 8


class S3StorageManager(CloudStorageManager):
    kind = "s3"
    scheme = "s3"

    def __init__(
        self,
        bucket: str,
        prefix: str | None = None,
        *,
        access_key: str | None = None,
        secret_key: str | None = None,
        endpoint_url: str | None = None,
        temp_dir: str | None = None,
        client: Any = None,
    ) -> None:
        super().__init__(bucket, prefix, temp_dir)
        self.endpoint_url = endpoint_url
        self.list_page_size: int | None = None  # S3's own (1000) unless set (tests)
        if client is None:
            session = boto3.session.Session(
                aws_access_key_id=access_key, aws_secret_access_key=secret_key
            )
            client = session.client(
                "s3",
                endpoint_url=endpoint_url,
                config=botocore.config.Config(
                    retries={"max_attempts": 5, "mode": "standard"},
                    s3={"addressing_style": "path"} if endpoint_url else None,
                ),
            )
        self.client = client
        self.transfer = TransferConfig(
            multipart_threshold=MULTIPART_THRESHOLD,
            multipart_chunksize=MULTIPART_CHUNKSIZE,
            max_concurrency=MAX_CONCURRENCY,
            use_threads=True,
        )

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> S3StorageManager:
        return cls(
            cfg.get("bucket") or "",
            cfg.get("prefix"),
            access_key=cfg.get("access_key"),
            secret_key=cfg.get("secret_key"),
            endpoint_url=cfg.get("endpoint_url"),
            temp_dir=cfg.get("temp_dir"),
        )

    def describe(self) -> str:
        where = super().describe()
        return f"{where} (endpoint {self.endpoint_url})" if self.endpoint_url else where

    def _wrap(self, action: str, exc: Exception) -> StorageError:
        if isinstance(exc, botocore.exceptions.ClientError):
            err = exc.response.get("Error", {})
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            detail = f"{err.get('Code')} (HTTP {status}): {err.get('Message') or exc}"
        else:
            detail = f"{type(exc).__name__}: {exc}"
        return StorageError(f"s3 bucket {self.bucket!r} at {self.describe()}: {action}: {detail}")

    def _put(self, local: Path, key: str) -> None:
        try:
            self.client.upload_file(str(local), self.bucket, key, Config=self.transfer)
        except FileNotFoundError:
            raise
        except (
            Boto3Error,
            botocore.exceptions.BotoCoreError,
            botocore.exceptions.ClientError,
        ) as e:
            if not local.exists():
                raise FileNotFoundError(str(local)) from e
            raise self._wrap(f"upload of {key}", e) from e

    def _get(self, key: str, local: Path) -> None:
        try:
            self.client.download_file(self.bucket, key, str(local), Config=self.transfer)
        except (
            Boto3Error,
            botocore.exceptions.BotoCoreError,
            botocore.exceptions.ClientError,
        ) as e:
            raise self._wrap(f"download of {key}", e) from e

    def _list(self, prefix: str) -> Iterator[tuple[str, int]]:
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.bucket,
                Prefix=prefix,
                PaginationConfig={"PageSize": self.list_page_size} if self.list_page_size else {},
            )
            for page in pages:
                for obj in page.get("Contents", []):
                    yield obj["Key"], int(obj["Size"])
        except _ERRORS as e:
            raise self._wrap(f"listing of {prefix}", e) from e

    def _delete_keys(self, keys: list[str]) -> None:
        try:
            for i in range(0, len(keys), 1000):
                chunk = keys[i : i + 1000]
                answer = self.client.delete_objects(
                    Bucket=self.bucket,
                    Delete={"Objects": [{"Key": k} for k in chunk], "Quiet": True},
                )
                errors = answer.get("Errors") or []
                if errors:
                    first = errors[0]
                    raise StorageError(
                        f"s3 bucket {self.bucket!r}: {len(errors)} object(s) not deleted, "
                        f"e.g. {first.get('Key')}: {first.get('Code')} {first.get('Message')}"
                    )
        except _ERRORS as e:
            raise self._wrap("delete", e) from e
