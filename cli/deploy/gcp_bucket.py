"""The cluster's state bucket: Terraform state, the variables file and the Resolute wheel.

The CLI creates it before Terraform runs (the gcs backend needs it to exist) and deletes it after
a successful `down`. It is private (uniform bucket-level access, public access prevention) and
versioned, so an earlier state can be recovered. google-cloud-storage honours
STORAGE_EMULATOR_HOST, which is how tests point it at a fake on 127.0.0.1.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from google.api_core import exceptions as api_exceptions
from google.auth import exceptions as auth_exceptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage


class StateBucketError(RuntimeError):
    """A Cloud Storage call failed; the message says which and Google's reason."""


@contextmanager
def _call(what: str) -> Iterator[None]:
    try:
        yield
    except (api_exceptions.GoogleAPICallError, api_exceptions.RetryError) as exc:
        raise StateBucketError(f"{what}: {exc}") from exc
    except auth_exceptions.GoogleAuthError as exc:
        raise StateBucketError(
            f"{what}: no usable Google credentials ({exc}); run "
            "`gcloud auth application-default login`"
        ) from exc


class StateBucket:
    def __init__(self, name: str, project: str) -> None:
        self.name = name
        # Against an emulator no real credentials are looked for (they could ask a metadata
        # server); against Google, Application Default Credentials as for gcloud and Terraform.
        credentials = AnonymousCredentials() if os.environ.get("STORAGE_EMULATOR_HOST") else None
        with _call("connecting to Cloud Storage"):
            self._client = storage.Client(project=project, credentials=credentials)

    def exists(self) -> bool:
        with _call(f"reading gs://{self.name}"):
            try:
                self._client.get_bucket(self.name)
            except api_exceptions.NotFound:
                return False
        return True

    def ensure(self, location: str, labels: Mapping[str, str]) -> bool:
        """Create the bucket unless it exists; True when it was created."""
        if self.exists():
            return False
        bucket = self._client.bucket(self.name)
        bucket.iam_configuration.uniform_bucket_level_access_enabled = True
        bucket.iam_configuration.public_access_prevention = "enforced"
        bucket.versioning_enabled = True
        bucket.labels = dict(labels)
        with _call(f"creating gs://{self.name}"):
            try:
                self._client.create_bucket(bucket, location=location)
                return True
            except api_exceptions.Conflict:
                pass
        # Bucket names are global: a Conflict for a bucket we cannot read is someone else's.
        try:
            mine = self.exists()
        except StateBucketError:
            mine = False
        if not mine:
            raise StateBucketError(
                f"the bucket name {self.name} is taken by another project: choose another "
                "with --tf-state-gcs-bucket-name"
            )
        return False

    def upload(
        self, name: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> None:
        with _call(f"uploading gs://{self.name}/{name}"):
            self._client.bucket(self.name).blob(name).upload_from_string(
                data, content_type=content_type
            )

    def download(self, name: str) -> bytes | None:
        with _call(f"reading gs://{self.name}/{name}"):
            try:
                return self._client.bucket(self.name).blob(name).download_as_bytes()
            except api_exceptions.NotFound:
                return None

    def delete(self) -> None:
        """Delete every object (all versions), then the bucket."""
        bucket = self._client.bucket(self.name)
        with _call(f"deleting gs://{self.name}"):
            for blob in self._client.list_blobs(self.name, versions=True):
                try:
                    bucket.blob(blob.name, generation=blob.generation).delete()
                except api_exceptions.NotFound:
                    continue
            bucket.delete()
