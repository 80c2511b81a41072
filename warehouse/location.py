"""Where the warehouse lives: a local directory or an ``s3://bucket/prefix``, as an fsspec filesystem."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import fsspec

from schemas.errors import UserError

ENV_LOCATION = "VHD_WAREHOUSE"
ENV_S3_ENDPOINTS = ("VHD_S3_ENDPOINT_URL", "AWS_ENDPOINT_URL")  # first one set wins
DEFAULT_LOCATION = "vhd_warehouse"  # not "warehouse": that is the package in a checkout
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://(.*)$", re.DOTALL)
_BUCKET = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._\-]*$")


class WarehouseError(UserError):
    """A malformed warehouse location, an invalid frame, or a failed landing (one-line message)."""


@dataclass(frozen=True)
class Warehouse:
    """A resolved warehouse: fsspec root path (protocol stripped, no trailing slash) and its filesystem."""

    root: str
    url: str
    fs: fsspec.AbstractFileSystem
    protocol: str

    @property
    def is_local(self) -> bool:
        """Whether the warehouse is a directory on this machine."""
        return self.protocol == "file"

    def url_of(self, path: str) -> str:
        """The URL of a filesystem path of this warehouse (as DuckDB and users see it)."""
        return path if self.is_local else f"{self.protocol}://{path}"

    def path(self, relative: str) -> str:
        """The filesystem path of a path relative to the root."""
        return f"{self.root}/{relative}"

    def strip(self, path: str) -> str:
        """A path without this warehouse's ``protocol://`` prefix (the fsspec form)."""
        prefix = f"{self.protocol}://"
        return path[len(prefix) :] if path.startswith(prefix) else path


def _s3_filesystem() -> fsspec.AbstractFileSystem:
    """An s3fs filesystem honouring the endpoint environment variables (for MinIO, moto, ...)."""
    endpoint = next((os.environ[name] for name in ENV_S3_ENDPOINTS if os.environ.get(name)), None)
    client_kwargs = {"endpoint_url": endpoint} if endpoint else {}
    # Listings are never cached: another process (a worker, a later run) may commit files at any time.
    return fsspec.filesystem("s3", client_kwargs=client_kwargs, use_listings_cache=False)


def _resolve_s3(rest: str, given: str) -> Warehouse:
    """A warehouse in an S3 bucket (``rest`` is ``bucket/prefix``)."""
    parts = [part for part in rest.split("/") if part]
    if not parts or rest.startswith("/"):
        raise WarehouseError(f"warehouse location {given!r} names no bucket; use s3://BUCKET/PREFIX")
    if not _BUCKET.match(parts[0]):
        raise WarehouseError(
            f"warehouse location {given!r} has an invalid bucket name {parts[0]!r}; use s3://BUCKET/PREFIX"
        )
    if any(part in (".", "..") for part in parts):
        raise WarehouseError(
            f"warehouse location {given!r} contains '.' or '..'; give a plain s3://BUCKET/PREFIX"
        )
    root = "/".join(parts)
    return Warehouse(root=root, url=f"s3://{root}", fs=_s3_filesystem(), protocol="s3")


def _resolve_local(path: str, given: str) -> Warehouse:
    """A warehouse in a local directory (created lazily on first write)."""
    absolute = os.path.abspath(os.path.expanduser(path))
    if Path(absolute).is_file():
        raise WarehouseError(f"warehouse location {given!r} is an existing file; give a directory path")
    root = absolute.rstrip("/") or "/"
    return Warehouse(root=root, url=root, fs=fsspec.filesystem("file"), protocol="file")


def resolve_warehouse(location: str | None = None) -> Warehouse:
    """Resolve the warehouse: the argument, else ``$VHD_WAREHOUSE``, else ``./vhd_warehouse``."""
    if location is None:
        location = os.environ.get(ENV_LOCATION) or os.path.join(os.getcwd(), DEFAULT_LOCATION)
    if not isinstance(location, str):
        raise WarehouseError(f"warehouse location must be a string, got {type(location).__name__}")
    given = location
    location = location.strip()
    if not location:
        raise WarehouseError("warehouse location is empty; give a directory path or s3://BUCKET/PREFIX")
    if any(char in location for char in "\x00\n\r"):
        raise WarehouseError(
            f"warehouse location {given!r} contains a NUL or newline; give a plain path or s3:// URL"
        )
    match = _SCHEME.match(location)
    if match is None:
        return _resolve_local(location, given)
    scheme, rest = match.group(1).lower(), match.group(2)
    if scheme == "s3":
        return _resolve_s3(rest, given)
    if scheme == "file":
        if not rest.startswith("/"):
            raise WarehouseError(
                f"warehouse location {given!r} is not an absolute file:// URL; use file:///ABS/PATH"
            )
        return _resolve_local(rest, given)
    raise WarehouseError(
        f"warehouse location {given!r} uses unsupported scheme {scheme!r}; use a local path or s3://BUCKET/PREFIX"
    )
