"""Updates over Wi-Fi (POST /firmware/info, begin, file, switch): receive a set, verify it, switch.

The protocol, the limits and why each step is safe: docs/firmware.md, "Updating
over Wi-Fi". begin checks everything before it writes, and then writes only the
staging slot; switch verifies every staged file from flash before the one
atomic step (slots.switch). A piece streams from the socket to flash through
one CHUNK-byte buffer (links.Arriving). Imported at boot: its code packs in
while the heap is whole.
"""

import asyncio
import binascii
import gc
import hashlib
import io
import json
import os
import sys

from . import auth
from .protocol import NO_BODY, BadRequest, parse_json

PIECE_BYTES = 16 * 1024    # one /firmware/file body at most (microdot refuses larger bodies)
MAX_FILES = 64
MAX_FILE_BYTES = 128 * 1024
MAX_SET_BYTES = 1024 * 1024
MAX_PATH_CHARS = 64
MAX_DEPTH = 3              # path parts, the file's name included
MAX_VERSION_CHARS = 64
SPARE_BLOCKS = 8           # flash blocks kept free beyond the set's own (folders, the pointer, metadata)
CHUNK = 1024
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-."
LOADER_NAMES = ("boot", "main", "slots")
ACTIONS = ("info", "begin", "file", "switch")


class Refused(Exception):
    """Not acted on: `status` and `body` ({"message", ...}) are the answer."""

    def __init__(self, status, message, extra=None):
        super().__init__(message)
        self.status = status
        self.body = extra or {}
        self.body["message"] = message


def check_path(path):
    """`path` when it names a file inside a set, else Refused(400)."""
    if not isinstance(path, str) or not path or len(path) > MAX_PATH_CHARS:
        raise Refused(400, "a path must be a relative file name of 1 to " + str(MAX_PATH_CHARS) + " characters")
    parts = path.split("/")
    bad = len(parts) > MAX_DEPTH or not (path.endswith(".py") or path.endswith(".mpy"))
    for part in parts:
        bad = bad or part in ("", ".", "..") or part[0] == "."
        for char in part:
            bad = bad or char not in NAME_CHARS
    if bad:
        raise Refused(400, "path " + repr(path) + " refused: .py or .mpy, at most " + str(MAX_DEPTH)
                      + " levels, letters, digits, _ - . only; no absolute names, '..', empty or hidden parts")
    if len(parts) == 1 and path.rsplit(".", 1)[0] in LOADER_NAMES:
        raise Refused(400, path + " is the loader's: it changes only by cable")
    return path


def check_manifest(payload):
    """(version, [(path, size, digest)]) from a /firmware/begin body, else Refused."""
    if not isinstance(payload, dict):
        raise Refused(400, 'send {"version": ..., "files": [{"path", "size", "sha256"}, ...]}')
    version = payload.get("version")
    if not isinstance(version, str) or not version.strip() or len(version) > MAX_VERSION_CHARS:
        raise Refused(400, '"version" must be text of 1 to ' + str(MAX_VERSION_CHARS) + " characters")
    files = payload.get("files")
    if not isinstance(files, list) or not files:
        raise Refused(400, '"files" must be a list of {"path", "size", "sha256"}')
    if len(files) > MAX_FILES:
        raise Refused(413, str(len(files)) + " files; a set may have " + str(MAX_FILES))
    out = []
    stems = {}
    total = 0
    for entry in files:
        path = check_path(entry.get("path") if isinstance(entry, dict) else None)
        size = entry.get("size")
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise Refused(400, path + ': "size" must be a whole number of bytes')
        if size > MAX_FILE_BYTES:
            raise Refused(413, path + " is " + str(size) + " bytes; a file may have " + str(MAX_FILE_BYTES))
        digest = entry.get("sha256")
        try:
            digest = binascii.unhexlify(digest) if isinstance(digest, str) and len(digest) == 64 else None
        except ValueError:
            digest = None
        if digest is None:
            raise Refused(400, path + ': "sha256" must be 64 hex digits')
        stem = path.rsplit(".", 1)[0]
        if stem in stems:
            raise Refused(400, path + " is listed twice (as .py and .mpy, or twice over)")
        stems[stem] = 1
        total += size
        out.append((path, size, digest))
    if total > MAX_SET_BYTES:
        raise Refused(413, "the set is " + str(total) + " bytes; at most " + str(MAX_SET_BYTES))
    if "app" not in stems:
        raise Refused(400, "a set needs app.py or app.mpy: the loader starts it")
    return version, out


def _stat(path):
    """(is a folder, size), or None when there is nothing there."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return stat[0] & 0x4000 != 0, stat[6]


def _tree(folder, remove=False, block=4096):
    """The flash the files under `folder` hold (whole blocks); with `remove`, deletes them and it."""
    held = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        full = folder + "/" + name
        found = _stat(full)
        if found and found[0]:
            held += _tree(full, remove, block)
        else:
            held += _blocks(found[1] if found else 0, block)
            if remove:
                os.remove(full)
    if remove:
        os.rmdir(folder)
    return held


def _blocks(size, block=4096):
    return ((size + block - 1) // block or 1) * block


def _make_dirs(folder):
    at = ""
    for part in folder.split("/"):
        if part:
            at = at + "/" + part if at or folder[0] == "/" else part
            if not _stat(at):
                os.mkdir(at)


def _heap_free():
    """Free heap after a collection, or None without gc.mem_free (CPython)."""
    if not hasattr(gc, "mem_free"):
        return None
    gc.collect()
    return gc.mem_free()


def _nothing(name):
    pass


class _Chunks(io.IOBase):
    """A body read in small pieces, as a stream json.load can parse (no one contiguous copy of it)."""

    def __init__(self, chunks):
        self.chunks = chunks
        self.at = self.offset = 0

    def readinto(self, buffer):
        count = 0
        while count < len(buffer) and self.at < len(self.chunks):
            chunk = self.chunks[self.at]
            take = min(len(buffer) - count, len(chunk) - self.offset)
            buffer[count:count + take] = chunk[self.offset:self.offset + take]
            count += take
            self.offset += take
            if self.offset >= len(chunk):
                self.at += 1
                self.offset = 0
        return count

    def read(self, size=-1):  # CPython's json.load asks for it all at once
        out = b""
        for chunk in self.chunks:
            out += chunk
        return out


async def _read_json(body):
    """A streamed JSON body (links.Arriving), read CHUNK bytes at a time and parsed from the pieces."""
    if body.length <= 0:
        raise Refused(400, NO_BODY)
    chunks = []
    while body.body_left > 0:
        chunk = bytearray(min(CHUNK, body.body_left))
        count = await body.readinto(memoryview(chunk))
        if not count:
            raise Refused(400, "the body was cut short")
        chunks.append(chunk if count == len(chunk) else chunk[:count])
    try:
        return json.load(_Chunks(chunks))
    except ValueError:
        raise Refused(400, "the request body is not valid JSON")


class Updates:
    """The /firmware/* endpoints. `slots` is the loader's module (or a stand-in with its functions)."""

    def __init__(self, slots, token, flash_free, checkpoint=None):
        self.slots = slots
        self.token = token or ""
        self.flash_free = flash_free       # flash_free(path) -> (bytes free, block size)
        self.checkpoint = checkpoint or _nothing
        self.stage = None
        self.buffer = None
        self.lowest_heap = None            # the least free heap seen while receiving a piece
        self.restart_requested = False
        self.uploads = 0

    async def handle(self, action, authorization, content_type, body, args):
        """(status, answer) for POST /firmware/<action>; `body` is bytes, or for a piece a stream (see piece)."""
        if not self.token:
            return 403, {"message": 'updates over Wi-Fi need a "token" in config.json; flash this robot by cable'}
        if not auth.bearer_ok(authorization, self.token):
            return 401, {"message": "missing or wrong bearer token (send Authorization: Bearer <token>)"}
        if action not in ACTIONS:
            return 404, {"message": "no /firmware/" + str(action) + "; there are /firmware/info, begin, file, switch"}
        media = (content_type or "").split(";")[0].strip().lower()
        try:
            if action == "file":
                if media != "application/octet-stream":
                    raise Refused(415, "send a piece as application/octet-stream")
                return await self.piece(args or {}, body)
            if media != "application/json":
                raise Refused(415, "send JSON as application/json")
            try:
                payload = await _read_json(body) if hasattr(body, "readinto") else parse_json(body)
            except (BadRequest, Refused) as problem:
                raise Refused(400, str(problem))
            except MemoryError:
                raise
            except Exception:  # e.g. MicroPython's recursion limit on deeply nested JSON
                raise Refused(400, "the request body is not JSON this robot can read")
            if action == "info":
                return 200, self.info()
            if action == "begin":
                return await self.begin(payload)
            return await self.switch(payload)
        except Refused as refused:
            return refused.status, refused.body
        except MemoryError:
            self.buffer = None
            gc.collect()
            return 503, {"message": "the robot ran out of memory in /firmware/" + action + "; try again"}
        except OSError as failure:  # the flash itself: space is checked before anything is written
            return 503, {"message": "the robot's flash failed in /firmware/" + action + ": " + str(failure)}

    def info(self):
        slots = self.slots
        state = slots.state()
        free, block = self.flash_free(slots.root())
        stage = self.stage
        if stage:
            stage = {"stage": stage["id"], "version": stage["version"], "slot": stage["slot"],
                     "missing": len([1 for entry in stage["files"] if entry[3] < entry[1]])}
        state["version"] = slots.running["version"]
        state["restart_pending"] = state.pop("pending")
        state["mpy"] = getattr(sys.implementation, "_mpy", 0)
        state["platform"] = sys.platform
        state["free_flash"] = free
        state["flash_block"] = block
        state["limits"] = {"files": MAX_FILES, "file_bytes": MAX_FILE_BYTES, "set_bytes": MAX_SET_BYTES,
                           "piece_bytes": PIECE_BYTES, "path_chars": MAX_PATH_CHARS}
        state["heap"] = {"free": _heap_free(), "lowest_while_receiving": self.lowest_heap}
        state["staged"] = stage
        return state

    async def begin(self, payload):
        version, files = check_manifest(payload)
        slots = self.slots
        if slots.state()["pending"]:
            raise Refused(409, "a switch waits for the robot to restart; begin again once it has")
        slot = slots.staging_slot()
        folder = slots.slot_dir(slot)
        free, block = self.flash_free(slots.root())
        free += _tree(folder, False, block)  # the old staging slot's files go first
        need = (SPARE_BLOCKS + len(files)) * block
        for entry in files:
            need += _blocks(entry[1], block)
        if need > free:
            raise Refused(413, "the set needs " + str(need // 1024) + " KB of flash; " + str(free // 1024) + " KB is free",
                          {"need_bytes": need, "free_bytes": free})
        # Everything is checked: only now is the flash written, and only the staging slot.
        self.stage = None
        slots.prepare(slot, self.checkpoint)
        _tree(folder, remove=True)
        _make_dirs(folder)
        running = slots.running["dir"] or slots.root()
        entries = []
        index = {}
        needed = []
        for path, size, digest in files:
            target = folder + "/" + path
            if "/" in path:
                _make_dirs(target.rsplit("/", 1)[0])
            found = _stat(running + "/" + path)
            if found and found[1] == size and await self._hash(running + "/" + path) == digest:
                await self._copy(running + "/" + path, target)  # switch checks the copy too
                received = size
            else:
                open(target, "wb").close()
                received = 0
                if size:
                    needed.append(path)
                elif await self._hash(target) != digest:
                    raise Refused(400, path + ": that is not the sha256 of an empty file")
            index[path] = len(entries)
            entries.append([path, size, digest, received])
        self.uploads += 1
        try:
            noise = binascii.hexlify(os.urandom(4)).decode()
        except (AttributeError, OSError):
            noise = "0"
        stage_id = str(self.uploads) + "-" + noise
        self.stage = {"id": stage_id, "slot": slot, "dir": folder, "version": version, "files": entries, "index": index}
        return 200, {"stage": stage_id, "slot": slot, "needed": needed, "copied": len(files) - len(needed),
                     "piece_bytes": PIECE_BYTES}

    async def piece(self, args, body):
        """Bytes of one file from `offset`: `body` has `length` and `async readinto(view)` (links.Arriving)."""
        stage = self._stage(args.get("stage"))
        path = args.get("path")
        at = stage["index"].get(path) if isinstance(path, str) else None
        if at is None:
            raise Refused(400, "path " + repr(path) + " is not in this upload")
        entry = stage["files"][at]
        try:
            offset = int(args.get("offset"))
        except (TypeError, ValueError):
            raise Refused(400, '"offset" must be the byte the piece starts at')
        length = getattr(body, "length", 0)
        if length > PIECE_BYTES:
            raise Refused(413, "a piece may carry " + str(PIECE_BYTES) + " bytes")
        if length <= 0:
            raise Refused(400, "an empty piece (its bytes go with a Content-Length)")
        size, digest, received = entry[1], entry[2], entry[3]
        if offset != received or received >= size:
            raise Refused(409, path + " has " + str(received) + " of " + str(size) + " bytes; a piece must start there",
                          {"offset": received})
        if offset + length > size:
            raise Refused(413, "the piece ends at byte " + str(offset + length) + "; " + path + " has " + str(size))
        target = stage["dir"] + "/" + path
        view = memoryview(self._chunk())
        written = 0
        with open(target, "ab") as handle:
            while written < length:
                count = await body.readinto(view[:min(CHUNK, length - written)])
                if not count:
                    break
                handle.write(view[:count])
                if written * 2 < length <= (written + count) * 2:
                    self.checkpoint("piece-half-written")
                written += count
        if written < length:
            self._again(entry, target)
            raise Refused(400, "the piece was cut short at " + str(written) + " of " + str(length) + " bytes; " + path
                          + " was deleted: send it again from byte 0", {"offset": 0})
        entry[3] = received = received + length
        free = _heap_free()
        if free is not None and (self.lowest_heap is None or free < self.lowest_heap):
            self.lowest_heap = free
        if received == size and await self._hash(target) != digest:
            self._again(entry, target)
            raise Refused(400, path + ": sha256 differs from /firmware/begin's; deleted, send it again", {"offset": 0})
        return 200, {"path": path, "received": received, "complete": received == size}

    async def switch(self, payload):
        if not isinstance(payload, dict):
            raise Refused(400, 'send {"stage": ..., "version": ...}')
        stage = self._stage(payload.get("stage"))
        if payload.get("version") != stage["version"]:
            raise Refused(409, "the upload in progress is version " + str(stage["version"]))
        missing = [entry[0] for entry in stage["files"] if entry[3] < entry[1]]
        if missing:
            raise Refused(409, str(len(missing)) + " file(s) not received yet, e.g. " + missing[0], {"missing": missing[:10]})
        for entry in stage["files"]:
            target = stage["dir"] + "/" + entry[0]
            found = _stat(target)
            if not found or found[1] != entry[1] or await self._hash(target) != entry[2]:
                self._again(entry, target)
                raise Refused(409, entry[0] + " on flash is not what was sent (size or sha256); send it again",
                              {"missing": [entry[0]]})
        self.checkpoint("verified")
        self.slots.switch(stage["slot"], stage["version"], self.checkpoint)
        self.stage = self.buffer = None
        self.restart_requested = True
        return 200, {"switched": True, "slot": stage["slot"], "version": stage["version"], "restarting": True}

    def _stage(self, stage_id):
        if not self.stage:
            raise Refused(409, "no upload in progress (a restart ends one); POST /firmware/begin first")
        if stage_id != self.stage["id"]:
            raise Refused(409, "that upload was replaced by another /firmware/begin")
        return self.stage

    def _again(self, entry, target):
        """The file starts over from byte 0."""
        entry[3] = 0
        open(target, "wb").close()

    def _chunk(self):
        if self.buffer is None:
            self.buffer = bytearray(CHUNK)
        return self.buffer

    async def _hash(self, path):
        buffer = self._chunk()
        view = memoryview(buffer)
        digest = hashlib.sha256()
        with open(path, "rb") as handle:
            while True:
                count = handle.readinto(buffer)
                if not count:
                    return digest.digest()
                digest.update(view[:count])
                await asyncio.sleep(0)  # the face keeps moving and the watchdog is fed meanwhile

    async def _copy(self, source, target):
        buffer = self._chunk()
        view = memoryview(buffer)
        with open(source, "rb") as reading:
            with open(target, "wb") as writing:
                while True:
                    count = reading.readinto(buffer)
                    if not count:
                        return
                    writing.write(view[:count])
                    await asyncio.sleep(0)
