"""gcs checkpoint storage (google-cloud-storage, imported only when a gcs storage is built).

Config keys as in Determined: ``bucket`` (required) and ``prefix``. Credentials come from the
client's own chain (``GOOGLE_APPLICATION_CREDENTIALS``, the metadata server); with
``STORAGE_EMULATOR_HOST`` set the client talks, anonymously, to that emulator instead.

Files go up as resumable uploads in ``CHUNK_SIZE`` pieces (small ones in one multipart
request) straight from the file, and come down streamed into a file: no file is held in memory
whole. The client retries 5xx, 429 and connection errors with backoff (its DEFAULT_RETRY; uploads
are made retryable with ``if_generation_match=0``: a new object, so a retry cannot clobber);
what is left is raised as a StorageError naming the bucket.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from google.api_core import exceptions as gexc
from google.cloud import storage
from google.cloud.storage.retry import DEFAULT_RETRY

from harness.core._storage import StorageError
from harness.core._storage_cloud import CloudStorageManager

MiB = 1024 * 1024
CHUNK_SIZE = 32 * MiB  # a multiple of 256 KiB, as resumable uploads require


class GCSStorageManager(CloudStorageManager):
    kind = "gcs"
    scheme = "gs"

    def __init__(
        self,
        bucket: str,
        prefix: str | None = None,
        *,
        temp_dir: str | None = None,
        client: Any = None,
    ) -> None:
        super().__init__(bucket, prefix, temp_dir)
        self.client = client if client is not None else storage.Client()
        self._bucket = self.client.bucket(bucket)

    @classmethod
    def from_config(cls, cfg: dict[str, Any]) -> GCSStorageManager:
        return cls(cfg.get("bucket") or "", cfg.get("prefix"), temp_dir=cfg.get("temp_dir"))

    def _wrap(self, action: str, exc: Exception) -> StorageError:
        retried = ""
        if isinstance(exc, gexc.RetryError) and exc.cause is not None:
            retried = f" (gave up retrying: {exc.message})"
            exc = exc.cause  # type: ignore[assignment]
        code = getattr(exc, "code", None)
        message = getattr(exc, "message", None) or str(exc)
        response = getattr(exc, "response", None)  # google-resumable-media's InvalidResponse
        if not isinstance(code, int) and response is not None:
            code = getattr(response, "status_code", None)
            message = (getattr(response, "text", "") or message)[:300]
        detail = f"HTTP {code}: {message}" if isinstance(code, int) else repr(exc)
        return StorageError(
            f"gcs bucket {self.bucket!r} at {self.describe()}: {action}: {detail}{retried}"
        )

    def _put(self, local: Path, key: str) -> None:
        blob = self._bucket.blob(key, chunk_size=CHUNK_SIZE)
        try:
            blob.upload_from_filename(str(local), if_generation_match=0, retry=DEFAULT_RETRY)
        except gexc.PreconditionFailed:
            # A retried upload whose first attempt did land: the object is there already.
            blob.reload()
            if blob.size != local.stat().st_size:
                raise self._wrap(f"upload of {key}", RuntimeError("object exists")) from None
        except FileNotFoundError:
            raise
        except (gexc.GoogleAPIError, OSError, ValueError) as e:
            raise self._wrap(f"upload of {key}", e) from e

    def _get(self, key: str, local: Path) -> None:
        blob = self._bucket.blob(key, chunk_size=CHUNK_SIZE)
        try:
            blob.download_to_filename(str(local), retry=DEFAULT_RETRY)
        except (gexc.GoogleAPIError, OSError, ValueError) as e:
            raise self._wrap(f"download of {key}", e) from e

    def _list(self, prefix: str) -> Iterator[tuple[str, int]]:
        try:
            for blob in self.client.list_blobs(self.bucket, prefix=prefix, retry=DEFAULT_RETRY):
                yield blob.name, int(blob.size or 0)
        except gexc.GoogleAPIError as e:
            raise self._wrap(f"listing of {prefix}", e) from e

    def _delete_keys(self, keys: list[str]) -> None:
        for key in keys:
            try:
                self._bucket.blob(key).delete(retry=DEFAULT_RETRY)
            except gexc.NotFound:
                continue
            except gexc.GoogleAPIError as e:
                raise self._wrap(f"delete of {key}", e) from e
