"""Writes the adapter files of docs/clients.md into a folder, so that the client tests import
exactly the code the page shows.

    python3 tests/clients/extract.py DOC OUTDIR NAME...

A file is a fenced code block right after a line `<!-- file: NAME -->` (blank lines between are
allowed, nothing else). Every NAME given must be on the page exactly once, and no other file may
be: a renamed or duplicated block fails here rather than leaving a stale copy to be tested. A
file whose contents are unchanged is not rewritten, so cargo does not rebuild the Rust test.
"""

import re
import sys
from pathlib import Path

MARKER = re.compile(r"^<!-- file: (\S+) -->\s*$")
FENCE = re.compile(r"^(`{3,})[\w+-]*\s*$")


def blocks(lines):
    """(name, text, line number of the marker) for each marked block."""
    i = 0
    while i < len(lines):
        marker = MARKER.match(lines[i])
        i += 1
        if not marker:
            continue
        start = i
        while i < len(lines) and not lines[i].strip():
            i += 1
        fence = FENCE.match(lines[i]) if i < len(lines) else None
        if not fence:
            sys.exit(f"line {start}: <!-- file: {marker[1]} --> is not followed by a fenced code block")
        body_start = i + 1
        i = body_start
        while i < len(lines) and lines[i].rstrip() != fence[1]:
            i += 1
        if i == len(lines):
            sys.exit(f"line {start}: the code block of {marker[1]} is not closed")
        yield marker[1], "".join(lines[body_start:i]), start
        i += 1


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    doc, out, wanted = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    found = {}
    for name, text, line in blocks(doc.read_text(encoding="utf-8").splitlines(keepends=True)):
        if name in found:
            sys.exit(f"{doc}:{line}: a second block for {name}")
        if "/" in name or name.startswith("."):
            sys.exit(f"{doc}:{line}: {name!r} is not a plain file name")
        found[name] = text
    missing = sorted(set(wanted) - set(found))
    unexpected = sorted(set(found) - set(wanted))
    if missing or unexpected:
        sys.exit(f"{doc}: blocks missing: {missing or 'none'}; blocks no test uses: {unexpected or 'none'}")
    out.mkdir(parents=True, exist_ok=True)
    for name, text in found.items():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        print(f"{path} ({text.count(chr(10))} lines)")


if __name__ == "__main__":
    main()
