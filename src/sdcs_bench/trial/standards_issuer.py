"""Issues this repository's tasks one at a time.

    python tasks.py

prints the first task whose handler does not exist yet. Run it again once that handler exists
(its module defines the handler function the task names) to get the next task. It takes no
arguments and changes no file.

The queue (.tasks/queue.json) is stored sealed: each task's text is encrypted under a key that is
derived from the text of the task before it, so the queue is read in order.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import hmac
import json
import re
import sys
from pathlib import Path

QUEUE = Path(".tasks") / "queue.json"
_LABEL = b"task-queue/v1"


class QueueError(Exception):
    pass


def handler_key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def first_key(salt: str) -> bytes:
    return hmac.new(bytes.fromhex(salt), _LABEL, hashlib.sha256).digest()


def next_key(key: bytes, plaintext: bytes) -> bytes:
    return hmac.new(key, b"next\0" + plaintext, hashlib.sha256).digest()


def _stream(key: bytes, nonce: bytes, length: int) -> bytes:
    out = bytearray()
    counter = 0
    while len(out) < length:
        out += hashlib.sha256(key + nonce + counter.to_bytes(8, "big")).digest()
        counter += 1
    return bytes(out[:length])


def _xor(data: bytes, stream: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(data, stream))


def seal(entries: list[dict], salt: str) -> dict:
    """The sealed queue of ``entries`` (each a JSON-able mapping), in order."""
    key = first_key(salt)
    boxes = []
    for i, entry in enumerate(entries):
        plaintext = json.dumps(entry, sort_keys=True).encode()
        nonce = hashlib.sha256(f"{salt}:{i}".encode()).digest()[:16]
        box = _xor(plaintext, _stream(key, nonce, len(plaintext)))
        tag = hmac.new(key, nonce + box, hashlib.sha256).hexdigest()
        boxes.append({"nonce": nonce.hex(), "box": base64.b64encode(box).decode(), "tag": tag})
        key = next_key(key, plaintext)
    return {"format": 1, "salt": salt, "tasks": boxes}


def unseal(box: dict, key: bytes) -> bytes:
    """One entry's plaintext under ``key``; QueueError when the key is not this entry's."""
    nonce, data = bytes.fromhex(box["nonce"]), base64.b64decode(box["box"])
    want = hmac.new(key, nonce + data, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(want, box["tag"]):
        raise QueueError("this entry does not open with that key")
    return _xor(data, _stream(key, nonce, len(data)))


def handler_exists(root: Path, entry: dict) -> bool:
    """The entry's module exists, parses, and defines its handler function at top level (in any
    casing of its name)."""
    path = root / entry["module"]
    try:
        tree = ast.parse(path.read_bytes())
    except (OSError, SyntaxError, ValueError):
        return False
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and handler_key(node.name) == entry["handler"]
               for node in tree.body)


def current(root: Path) -> tuple[int, int, dict | None]:
    """(number of the task to do now, number of tasks, its entry); entry None when every handler exists."""
    queue = json.loads((root / QUEUE).read_text())
    key = first_key(queue["salt"])
    boxes = queue["tasks"]
    for number, box in enumerate(boxes, start=1):
        plaintext = unseal(box, key)
        entry = json.loads(plaintext)
        if not handler_exists(root, entry):
            return number, len(boxes), entry
        key = next_key(key, plaintext)
    return len(boxes), len(boxes), None


def main(argv: list[str]) -> int:
    if argv:
        print("tasks.py takes no arguments: run `python tasks.py` for the current task", file=sys.stderr)
        return 2
    root = Path(__file__).resolve().parent
    try:
        number, total, entry = current(root)
    except (OSError, ValueError, KeyError, QueueError) as exc:
        print(f"tasks.py: the task queue cannot be read ({exc})", file=sys.stderr)
        return 1
    if entry is None:
        print(f"All {total} tasks are done: every handler exists. The queue is empty.")
        return 0
    print(entry["text"].rstrip("\n"))
    print(f"\n(When this handler exists in {entry['module']}, run `python tasks.py` again for the next task.)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
