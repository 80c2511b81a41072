"""Checks made before any work starts: can the warehouse be read (is there one) or written, can an output file be
written. Each failure is one WarehouseError line naming the location and what to do; nothing is created.

- **Local folders.** Writing needs the nearest existing folder on the way to the location to be a folder this user
  may write (not a file, not a read-only mount) on a real filesystem: `/proc`, `/sys` and the kernel's other pseudo
  filesystems (found from ``/proc/self/mounts``) are refused. Reading needs the folder to be a warehouse: it holds
  the commit markers' folder (``_commits``) or a table's folder. A folder with neither (a mistyped path, the
  default ``./vhd_warehouse`` where nothing ran) is named as missing rather than answered as empty; a warehouse
  whose runs landed files but never committed (a crash) still reads as empty.
- **S3.** Credentials must resolve the way s3fs resolves them (key and secret given to the filesystem, else
  botocore's chain: environment, shared files, instance metadata) and one listing of the warehouse's prefix must
  succeed: the bucket exists, the endpoint answers, the credentials are accepted. The same listing tells whether a
  warehouse is there. Writing is not tried (no object is written by a check).
"""

from __future__ import annotations

import os
import re

from warehouse.location import ENV_S3_ENDPOINTS, Warehouse, WarehouseError, resolve_warehouse

COMMITS_DIR = "_commits"  # warehouse.commits.COMMITS_DIR (not imported: that module loads pyarrow.parquet)
# Kernel filesystems that look like folders but hold no files of ours: writing there fails or does harm.
PSEUDO_FILESYSTEMS = frozenset({
    "proc", "sysfs", "devtmpfs", "devpts", "cgroup", "cgroup2", "debugfs", "tracefs", "securityfs", "pstore", "bpf",
    "configfs", "fusectl", "mqueue", "hugetlbfs", "binfmt_misc", "autofs", "efivarfs", "selinuxfs", "nsfs",
    "rpc_pipefs",
})
_PSEUDO_ROOTS = ("/proc", "/sys")  # refused even where the mount table cannot be read
_S3_LOCATION = re.compile(r"^s3://([^/]+)/?(.*)$", re.IGNORECASE | re.DOTALL)


def _warehouse(warehouse: Warehouse | str | None) -> Warehouse:
    return warehouse if isinstance(warehouse, Warehouse) else resolve_warehouse(warehouse)


# --- local folders ---------------------------------------------------------------------------------------------

def _unescape(field: str) -> str:
    """A path of /proc/self/mounts (spaces and the like are octal escapes there)."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)


def _mount_of(path: str) -> tuple[str, str] | None:
    """(mount point, filesystem type) of the mount holding an existing absolute path; None where unknown."""
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return None
    found = None
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount = _unescape(fields[1])
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and (found is None or len(mount) >= len(found[0])):  # the deepest, and the last one mounted there
            found = (mount, fields[2])
    return found


def _refuse_pseudo(path: str, what: str) -> None:
    """WarehouseError when an existing path lies on a kernel pseudo filesystem (/proc, /sys, ...)."""
    real = os.path.realpath(path)
    mount = _mount_of(real)
    if mount is not None and mount[1] in PSEUDO_FILESYSTEMS:
        where = f"{mount[0]} ({mount[1]})"
    elif any(real == root or real.startswith(root + "/") for root in _PSEUDO_ROOTS):
        where = "/" + real.split("/")[1]
    else:
        return
    raise WarehouseError(f"{what} is on {where}, a pseudo filesystem of the kernel that holds no files; give a "
                         "folder on a disk or s3://BUCKET/PREFIX")


def _nearest_existing(path: str) -> str:
    """The path itself if it exists, else its nearest existing ancestor."""
    current = path
    while not os.path.lexists(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def _check_local_folder(path: str, what: str, write: bool, location: bool = True) -> bool:
    """Whether the folder `path` exists; WarehouseError if it cannot be a folder we read (and with `write`, write).

    A missing folder is fine for writing when its nearest existing ancestor is a folder we may write: it is
    created on first write. `location` says `path` is what the user named (else it is the folder of their file).
    """
    existing = _nearest_existing(path)
    _refuse_pseudo(existing, what)
    if not os.path.isdir(existing):
        if existing == path and location:
            raise WarehouseError(f"{what} is an existing file, not a folder; give a folder path or "
                                 "s3://BUCKET/PREFIX")
        raise WarehouseError(f"{what} is under {existing}, which is a file, not a folder; give a path below a "
                             "folder (missing folders are created)")
    if write and not os.access(existing, os.W_OK | os.X_OK):
        raise WarehouseError(f"{what} cannot be written: {existing} is read-only for this user; give a folder you "
                             "can write")
    if existing == path and not os.access(path, os.R_OK | os.X_OK):
        raise WarehouseError(f"{what} cannot be read by this user; fix its permissions or give another folder")
    return existing == path


def _local_holds_warehouse(wh: Warehouse) -> bool:
    """Whether a local folder holds a warehouse: its commit markers' folder or a table's folder."""
    from schemas.columns import TABLES

    return any(os.path.isdir(os.path.join(wh.root, name)) for name in (COMMITS_DIR, *TABLES))


# --- S3 ---------------------------------------------------------------------------------------------------------

def _s3_client(fs):
    """A botocore S3 client configured as the warehouse's s3fs filesystem is (endpoint, explicit keys, anon),
    with short timeouts and one retry: a check must answer in seconds. None when there are no credentials."""
    import botocore.session
    from botocore import UNSIGNED
    from botocore.config import Config

    session = botocore.session.get_session()
    client_kwargs = dict(getattr(fs, "client_kwargs", {}) or {})
    endpoint = client_kwargs.pop("endpoint_url", None) or getattr(fs, "endpoint_url", None) or next(
        (os.environ[name] for name in ENV_S3_ENDPOINTS if os.environ.get(name)), None)
    region = client_kwargs.pop("region_name", None)
    anon = bool(getattr(fs, "anon", False))
    keys = {"aws_access_key_id": getattr(fs, "key", None), "aws_secret_access_key": getattr(fs, "secret", None),
            "aws_session_token": getattr(fs, "token", None)}
    if not anon and not (keys["aws_access_key_id"] and keys["aws_secret_access_key"]):
        if session.get_credentials() is None:  # the chain s3fs uses through aiobotocore
            return None
        keys = {}
    config = Config(connect_timeout=5, read_timeout=15, retries={"max_attempts": 2, "mode": "standard"},
                    **({"signature_version": UNSIGNED} if anon else {}))
    return session.create_client("s3", endpoint_url=endpoint, region_name=region, config=config,
                                 **{name: value for name, value in keys.items() if value})


def _s3_listing(url: str, bucket: str, prefix: str, fs) -> set[str]:
    """The names directly under s3://bucket/prefix (one listing); WarehouseError naming the location otherwise."""
    from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError, NoCredentialsError
    from botocore.exceptions import ConnectionError as EndpointError

    no_credentials = (f"no AWS credentials found for {url}; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
                      "AWS_PROFILE with ~/.aws/credentials), or use a local folder")
    endpoint = "of AWS"
    try:
        client = _s3_client(fs)
        if client is None:
            raise WarehouseError(no_credentials)
        endpoint = re.sub(r"//[^/@]*@", "//", client.meta.endpoint_url)  # no user:password in a message
        start = f"{prefix}/" if prefix else ""
        answer = client.list_objects_v2(Bucket=bucket, Prefix=start, Delimiter="/", MaxKeys=1000)
    except NoCredentialsError:
        raise WarehouseError(no_credentials) from None
    except (EndpointError, HTTPClientError) as error:
        raise WarehouseError(f"cannot reach the S3 endpoint {endpoint} for {url} ({type(error).__name__}); check the "
                             f"network, or {' / '.join(ENV_S3_ENDPOINTS)} for a MinIO or other S3 store") from None
    except ClientError as error:
        code = str(error.response.get("Error", {}).get("Code", ""))
        status = error.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
        if code == "NoSuchBucket" or (status == 404 and not code):
            raise WarehouseError(f"bucket {bucket!r} of {url} does not exist; create it (aws s3 mb s3://{bucket}) "
                                 "or check the name") from None
        if code in ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidClientTokenId",
                    "ExpiredToken", "InvalidToken", "AllAccessDisabled") or status == 403:
            raise WarehouseError(f"access to {url} was refused ({code or status}); check the AWS credentials and "
                                 f"that they may list and write bucket {bucket!r}") from None
        message = " ".join(str(error.response.get("Error", {}).get("Message", error)).split())
        raise WarehouseError(f"S3 refused to list {url} ({code or status}: {message})") from None
    except BotoCoreError as error:
        raise WarehouseError(f"cannot use {url}: {' '.join(str(error).split())}") from None
    names = {entry["Prefix"][len(start):].rstrip("/") for entry in answer.get("CommonPrefixes", [])}
    names |= {entry["Key"][len(start):] for entry in answer.get("Contents", [])}
    return names


def _s3_parts(wh: Warehouse) -> tuple[str, str]:
    bucket, _, prefix = wh.root.partition("/")
    return bucket, prefix


# --- the checks -------------------------------------------------------------------------------------------------

def check_writable(warehouse: Warehouse | str | None) -> Warehouse:
    """The warehouse if a run can land there (local: the folder or its nearest existing ancestor is a writable
    folder on a real filesystem; S3: credentials resolve and the bucket answers a listing); else WarehouseError."""
    wh = _warehouse(warehouse)
    if wh.is_local:
        _check_local_folder(wh.root, f"warehouse location {wh.url}", write=True)
    else:
        _s3_listing(wh.url, *_s3_parts(wh), wh.fs)
    return wh


def check_readable(warehouse: Warehouse | str | None) -> Warehouse:
    """The warehouse if one is there to read; else WarehouseError, naming a missing warehouse as missing.

    Missing means: the location does not exist, or holds neither the commit markers' folder nor any table's folder
    (nothing ever landed there). A warehouse with landed but uncommitted files reads as empty.
    """
    wh = _warehouse(warehouse)
    if wh.is_local:
        exists = _check_local_folder(wh.root, f"warehouse location {wh.url}", write=False)
        present = exists and _local_holds_warehouse(wh)
    else:
        from schemas.columns import TABLES

        present = bool(_s3_listing(wh.url, *_s3_parts(wh), wh.fs) & {COMMITS_DIR, *TABLES})
    if not present:
        raise WarehouseError(f"no warehouse at {wh.url} (no committed runs); run `vhd generate --warehouse {wh.url}` "
                             "first, or pass --warehouse (or set $VHD_WAREHOUSE) to where your warehouse is")
    return wh


def check_output_file(out: str, option: str = "--out") -> None:
    """WarehouseError unless a file can be written at `out`: a local path whose target is not a folder and whose
    nearest existing folder is writable on a real filesystem, or an s3:// URL whose bucket answers (other fsspec
    URLs are left to their filesystem)."""
    if not isinstance(out, str) or not out.strip():
        raise WarehouseError(f"{option} is empty; give a file path")
    if "\x00" in out:
        raise WarehouseError(f"{option} {out!r} contains a NUL byte; give a plain file path")
    s3 = _S3_LOCATION.match(out)
    if s3:
        key = s3.group(2).strip("/")
        if not key:
            raise WarehouseError(f"{option} {out} names no object; give s3://BUCKET/PATH/FILE")
        wh = resolve_warehouse(f"s3://{s3.group(1)}")
        _s3_listing(out, s3.group(1), "", wh.fs)
        return
    if "://" in out and not out.startswith("file://"):
        return
    path = os.path.abspath(os.path.expanduser(out.removeprefix("file://")))
    what = f"{option} {out}"
    if os.path.isdir(path):
        raise WarehouseError(f"{what} is a folder; give a file path (e.g. {os.path.join(out, 'out.jsonl')})")
    if os.path.lexists(path) and not os.path.isfile(path):
        raise WarehouseError(f"{what} exists and is not a regular file; give a file path")
    _check_local_folder(os.path.dirname(path), what, write=True, location=False)
    if os.path.isfile(path) and not os.access(path, os.W_OK):
        raise WarehouseError(f"{what} exists and is read-only for this user; give another path")
