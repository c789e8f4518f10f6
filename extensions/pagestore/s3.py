"""S3 backend of the page store (boto3), configured by Scrapy's AWS_* settings.

The settings are the ones Scrapy's S3FeedStorage reads (AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_ENDPOINT_URL, AWS_REGION_NAME,
AWS_MAX_POOL_CONNECTIONS) plus AWS_USE_SSL / AWS_VERIFY, so feeds on s3:// and
bodies use one configuration. botocore's own retries are off: the pipeline owns
retrying (PAGESTORE_RETRIES, with backoff), so an operator can tell from one
setting how long a dead store is tried before the crawl stops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import boto3.session
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    NoCredentialsError,
    PartialCredentialsError,
)

from extensions.pagestore.protocol import StoreUnavailable, one_line

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

_MISSING = frozenset({"404", "NoSuchKey", "NotFound"})
_NO_BUCKET = frozenset({"NoSuchBucket"})
_DENIED = frozenset({"403", "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch"})


def s3_client(settings: BaseSettings) -> Any:
    """A boto3 S3 client from Scrapy's AWS_* settings (no botocore-level retries)."""
    timeout = settings.getfloat("PAGESTORE_TIMEOUT")
    pool = settings.getint("AWS_MAX_POOL_CONNECTIONS") or max(
        10, settings.getint("PAGESTORE_THREADS")
    )
    config = Config(
        connect_timeout=timeout,
        read_timeout=timeout,
        retries={"mode": "standard", "total_max_attempts": 1},
        max_pool_connections=pool,
    )
    kwargs: dict[str, Any] = {
        "aws_access_key_id": settings.get("AWS_ACCESS_KEY_ID") or None,
        "aws_secret_access_key": settings.get("AWS_SECRET_ACCESS_KEY") or None,
        "aws_session_token": settings.get("AWS_SESSION_TOKEN") or None,
        "endpoint_url": settings.get("AWS_ENDPOINT_URL") or None,
        "region_name": settings.get("AWS_REGION_NAME") or None,
        "config": config,
    }
    if settings.get("AWS_USE_SSL") is not None:
        kwargs["use_ssl"] = settings.getbool("AWS_USE_SSL")
    if settings.get("AWS_VERIFY") is not None:
        verify = settings.get("AWS_VERIFY")
        kwargs["verify"] = verify if isinstance(verify, str) else settings.getbool("AWS_VERIFY")
    return boto3.session.Session().client("s3", **kwargs)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


class S3PageStore:
    """Objects under s3://bucket/prefix/<key>; idempotent puts (HEAD first)."""

    setting = "PAGESTORE_URI"  # named in errors (the WARC store shares this class)

    def __init__(self, bucket: str, prefix: str, client: Any) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.client = client
        self.uri = f"s3://{bucket}/{self.prefix}" if self.prefix else f"s3://{bucket}"

    @classmethod
    def from_settings(cls, bucket: str, prefix: str, settings: BaseSettings) -> S3PageStore:
        return cls(bucket, prefix, s3_client(settings))

    @property
    def endpoint(self) -> str:
        return str(self.client.meta.endpoint_url)

    def _key(self, key: str) -> str:
        return f"{self.prefix}/{key}" if self.prefix else key

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return False
            raise
        return True

    def put(self, key: str, data: bytes) -> bool:
        # HEAD then PUT rather than If-None-Match: works on every S3-compatible
        # store, and a race between two workers writes identical bytes anyway.
        if self.exists(key):
            return False
        self.client.put_object(
            Bucket=self.bucket, Key=self._key(key), Body=data, ContentType="application/gzip"
        )
        return True

    def get(self, key: str) -> bytes:
        try:
            reply = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except ClientError as exc:
            if _code(exc) in _MISSING:
                raise KeyError(key) from None
            raise
        return bytes(reply["Body"].read())

    def ref(self, key: str) -> str:
        return f"{self.uri}/{key}"

    def check(self) -> None:
        """HEAD the bucket: proves the endpoint answers, the credentials are accepted
        and the bucket exists, before any page is fetched."""
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except (BotoCoreError, ClientError) as exc:
            raise StoreUnavailable(self.describe(exc)) from None

    def describe(self, exc: BaseException) -> str:
        """One line: what failed and what to do about it."""
        where = f"{self.setting} {self.uri} (endpoint {self.endpoint})"
        if isinstance(exc, (NoCredentialsError, PartialCredentialsError)):
            return f"{where}: no AWS credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
        if isinstance(exc, ClientError):
            code = _code(exc)
            if code in _NO_BUCKET or (code == "404" and "HeadBucket" in str(exc)):
                return f"{where}: bucket {self.bucket} does not exist; create it or fix the URI"
            if code in _DENIED:
                return (
                    f"{where}: access denied ({code}); check AWS_ACCESS_KEY_ID, "
                    f"AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN"
                )
            return f"{where}: {code or 'error'}: {one_line(exc)}"
        return (
            f"{where} is unreachable ({one_line(exc)}); start the S3 service "
            f"or fix AWS_ENDPOINT_URL"
        )
