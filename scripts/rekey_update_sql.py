#!/usr/bin/env python3
"""Rewrites the toolkit's part of sql/pg_objectid--0.5.0--0.6.0.sql from sql/rekey/.

The update script is the 0.5.0 toolkit's DROPs (kept as they are, up to the line that creates
objectid_internal) followed by every file of sql/rekey/ in the order src/rekey/mod.rs installs
them, except that the record of every rekey (rekey_state) is moved into objectid_internal with its
rows instead of being created. Run it after any change under sql/rekey/ while 0.6.0 is the version
in development: `python3 scripts/rekey_update_sql.py` (--check: fail if the file is not current).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
UPDATE = ROOT / "sql" / "pg_objectid--0.5.0--0.6.0.sql"
MOVE_STATE = """-- The record of every rekey moves, with its rows, policies, grants and guard trigger, into the
-- internal schema.
ALTER TABLE @extschema@.rekey_state SET SCHEMA objectid_internal;
ALTER FUNCTION @extschema@.rekey_state_guard() SET SCHEMA objectid_internal;
"""


def generate():
    text = UPDATE.read_text()
    start = text.index("CREATE SCHEMA objectid_internal;")
    # The header ends with the comment block, if any, that opens the first file.
    header = text[:start]
    order = re.findall(r'"\.\./\.\./(sql/rekey/[a-z0-9_/]+\.sql)"', (ROOT / "src/rekey/mod.rs").read_text())
    parts = []
    for path in order:
        body = MOVE_STATE if path.endswith("/rekey_state.sql") else (ROOT / path).read_text()
        if path.endswith("/objectid_internal.sql"):
            # Its opening comment describes the toolkit, which the header here already does.
            body = body[body.index("CREATE SCHEMA objectid_internal;"):]
        parts.append(body.rstrip("\n") + "\n")
    return header + "\n".join(parts)


def main():
    new = generate()
    if "--check" in sys.argv:
        if UPDATE.read_text() != new:
            sys.exit(f"{UPDATE.relative_to(ROOT)} is not current: run python3 scripts/rekey_update_sql.py")
        return
    UPDATE.write_text(new)


if __name__ == "__main__":
    main()
