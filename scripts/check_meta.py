#!/usr/bin/env python3
"""Checks a PGXN META.json against the PGXN Meta Spec 1.0.0, and against this project.

    scripts/check_meta.py META.json [--cargo-toml Cargo.toml] [--control FILE]... [--dist DIR]

The spec's rules, as its JSON schemas state them (distribution, base, term, version,
version_range, maintainer, license, provides, extension, path, meta-spec, prereqs, tags,
no_index, resources): required keys, types, SemVer versions, the license list, relative paths
and no keys outside the spec but custom x_ ones. Then, when asked:
  --cargo-toml  the distribution's version and every extension's version equal Cargo.toml's
                (the one place the version is kept);
  --control     ... and equal the default_version of each built control file;
  --dist        every file and docfile that provides names exists in the distribution's folder.
Every problem is reported, not only the first; the exit status is 1 if there is any.
Python's standard library only, so that the check does not depend on one outside tool.
"""
import argparse
import json
import re
import sys
import tomllib
from pathlib import Path, PurePosixPath

# The spec's own patterns (version.schema.json, version_range.schema.json).
SEMVER = (
    r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?"
)
# \Z, not $: $ also matches before a final newline, which "0.5.0\n" would slip through.
SEMVER_RE = re.compile(rf"^{SEMVER}\Z")
RANGE_PART = rf"(?:(?:[=!]=|[<>]=?)[ ]*)?(?:{SEMVER}|0)"
RANGE_RE = re.compile(rf"^{RANGE_PART}(?:,[ ]*{RANGE_PART})*\Z")
LICENSES = {
    "agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd", "freebsd",
    "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1", "lgpl_3_0", "mit",
    "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5", "postgresql", "qpl_1_0", "ssleay", "sun",
    "zlib", "open_source", "restricted", "unrestricted", "unknown",
}
META_SPEC_URLS = {"https://pgxn.org/meta/spec.txt", "http://pgxn.org/meta/spec.txt"}
TOP_KEYS = {
    "name", "version", "abstract", "maintainer", "license", "provides", "meta-spec",
    "description", "generated_by", "tags", "no_index", "prereqs", "release_status", "resources",
}
REQUIRED = ["name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"]
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONSHIPS = {"requires", "recommends", "suggests", "conflicts"}
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+$")


class Checker:
    def __init__(self):
        self.errors = []

    def error(self, where, message):
        self.errors.append(f"{where}: {message}")

    def custom(self, key):
        return len(key) > 2 and key[:2] in ("x_", "X_")

    def keys(self, where, obj, allowed):
        for key in obj:
            if key not in allowed and not self.custom(key):
                self.error(where, f"unknown key {key!r} (only the spec's keys and x_ custom keys)")

    def object(self, where, value):
        if not isinstance(value, dict):
            self.error(where, f"must be an object, not {type(value).__name__}")
            return False
        return True

    def string(self, where, value, min_length=1):
        if not isinstance(value, str):
            self.error(where, f"must be a string, not {type(value).__name__}")
            return False
        if len(value) < min_length:
            self.error(where, f"must have at least {min_length} character(s)")
            return False
        return True

    def term(self, where, value):
        # At least two characters, no slash, backslash, white space or control character.
        if self.string(where, value, 2) and (re.search(r"[/\\\s]", value) or CONTROL.search(value)):
            self.error(where, f"{value!r} is not a term (no /, \\, space or control character)")

    def version(self, where, value):
        if self.string(where, value) and not SEMVER_RE.match(value):
            self.error(where, f"{value!r} is not a semantic version (MAJOR.MINOR.PATCH)")

    def version_range(self, where, value):
        if value == 0 and not isinstance(value, bool):
            return
        if not isinstance(value, str) or not RANGE_RE.match(value):
            self.error(where, f"{value!r} is not a version range (0, \"1.2.3\", \">= 1.2.3, < 2.0.0\")")

    def path(self, where, value):
        if not self.string(where, value, 2):
            return
        p = PurePosixPath(value.removeprefix("./"))
        if "\\" in value or p.is_absolute() or any(part in ("..", ".") for part in p.parts):
            self.error(where, f"{value!r} is not a relative Unix path inside the distribution")

    def uri(self, where, value):
        if self.string(where, value) and not URI.match(value):
            self.error(where, f"{value!r} is not a URI")

    def string_list(self, where, value, item, min_items=1):
        if not isinstance(value, list):
            self.error(where, f"must be an array, not {type(value).__name__}")
            return
        if len(value) < min_items:
            self.error(where, f"must have at least {min_items} item(s)")
        if len({json.dumps(v, sort_keys=True) for v in value}) != len(value):
            self.error(where, "items must be unique")
        for i, v in enumerate(value):
            item(f"{where}[{i}]", v)

    def check(self, meta):
        if not self.object("META.json", meta):
            return
        for key in REQUIRED:
            if key not in meta:
                self.error("META.json", f"the required key {key!r} is missing")
        self.keys("META.json", meta, TOP_KEYS)
        if "name" in meta:
            self.term("name", meta["name"])
        if "version" in meta:
            self.version("version", meta["version"])
        for key in ("abstract", "description", "generated_by"):
            if key in meta:
                self.string(key, meta[key])
        if "maintainer" in meta:
            m = meta["maintainer"]
            if isinstance(m, list):
                self.string_list("maintainer", m, self.string)
            else:
                self.string("maintainer", m)
        if "license" in meta:
            self.license(meta["license"])
        if "provides" in meta:
            self.provides(meta["provides"])
        if "meta-spec" in meta:
            self.meta_spec(meta["meta-spec"])
        if "tags" in meta:
            self.string_list("tags", meta["tags"], self.tag)
        if "no_index" in meta:
            self.no_index(meta["no_index"])
        if "prereqs" in meta:
            self.prereqs(meta["prereqs"])
        if "release_status" in meta and meta["release_status"] not in ("stable", "testing", "unstable"):
            self.error("release_status", f"{meta['release_status']!r} is not stable, testing or unstable")
        if "resources" in meta:
            self.resources(meta["resources"])

    def license(self, value):
        def one(where, v):
            if v not in LICENSES:
                self.error(where, f"{v!r} is not a license of the spec's list ({', '.join(sorted(LICENSES))})")

        if isinstance(value, str):
            one("license", value)
        elif isinstance(value, list):
            self.string_list("license", value, one)
        elif isinstance(value, dict):
            if not value:
                self.error("license", "must name at least one license")
            for name, link in value.items():
                self.uri(f"license.{name}", link)
        else:
            self.error("license", "must be a license name, an array of them or an object of name: URI")

    def provides(self, value):
        if not self.object("provides", value):
            return
        if not value:
            self.error("provides", "must name at least one extension")
        for name, ext in value.items():
            where = f"provides.{name}"
            self.term(f"{where} (name)", name)
            if not self.object(where, ext):
                continue
            for key in ("file", "version"):
                if key not in ext:
                    self.error(where, f"the required key {key!r} is missing")
            self.keys(where, ext, {"file", "version", "abstract", "docfile", "docpath"})
            if "file" in ext:
                self.path(f"{where}.file", ext["file"])
            if "docfile" in ext:
                self.path(f"{where}.docfile", ext["docfile"])
            if "version" in ext:
                self.version(f"{where}.version", ext["version"])
            for key in ("abstract", "docpath"):
                if key in ext:
                    self.string(f"{where}.{key}", ext[key])

    def meta_spec(self, value):
        if not self.object("meta-spec", value):
            return
        if "version" not in value:
            self.error("meta-spec", "the required key 'version' is missing")
        elif not isinstance(value["version"], str) or not re.fullmatch(r"1\.0\.[0-9]+", value["version"]):
            self.error("meta-spec.version", f"{value['version']!r} is not 1.0.x, the spec checked here")
        if "url" in value and value["url"] not in META_SPEC_URLS:
            self.error("meta-spec.url", f"{value['url']!r} is not the spec's address")
        self.keys("meta-spec", value, {"version", "url"})

    def tag(self, where, value):
        if self.string(where, value, 2):
            if len(value) > 255:
                self.error(where, "a tag has at most 255 characters")
            if re.search(r"[/\\]", value) or CONTROL.search(value):
                self.error(where, f"{value!r} has a slash, backslash or control character")

    def no_index(self, value):
        if not self.object("no_index", value):
            return
        if not ({"file", "directory"} & value.keys()):
            self.error("no_index", "must have file or directory")
        self.keys("no_index", value, {"file", "directory"})
        for key in ("file", "directory"):
            if key in value:
                if isinstance(value[key], list):
                    self.string_list(f"no_index.{key}", value[key], self.path)
                else:
                    self.path(f"no_index.{key}", value[key])

    def prereqs(self, value):
        if not self.object("prereqs", value):
            return
        if not (PHASES & value.keys()):
            self.error("prereqs", f"must have at least one phase of {sorted(PHASES)}")
        self.keys("prereqs", value, PHASES)
        for phase in PHASES & value.keys():
            where = f"prereqs.{phase}"
            rels = value[phase]
            if not self.object(where, rels):
                continue
            if not (RELATIONSHIPS & rels.keys()):
                self.error(where, f"must have at least one of {sorted(RELATIONSHIPS)}")
            self.keys(where, rels, RELATIONSHIPS)
            for rel in RELATIONSHIPS & rels.keys():
                deps = rels[rel]
                if not self.object(f"{where}.{rel}", deps):
                    continue
                if not deps:
                    self.error(f"{where}.{rel}", "must name at least one prerequisite")
                for name, rng in deps.items():
                    self.term(f"{where}.{rel} (name)", name)
                    self.version_range(f"{where}.{rel}.{name}", rng)

    def resources(self, value):
        if not self.object("resources", value):
            return
        if not ({"homepage", "bugtracker", "repository"} & value.keys()):
            self.error("resources", "must have homepage, bugtracker or repository")
        self.keys("resources", value, {"homepage", "bugtracker", "repository"})
        if "homepage" in value:
            self.uri("resources.homepage", value["homepage"])
        if "bugtracker" in value and self.object("resources.bugtracker", value["bugtracker"]):
            bt = value["bugtracker"]
            self.keys("resources.bugtracker", bt, {"web", "mailto"})
            if "web" in bt:
                self.uri("resources.bugtracker.web", bt["web"])
            if (
                "mailto" in bt
                and self.string("resources.bugtracker.mailto", bt["mailto"])
                and not EMAIL.match(bt["mailto"])
            ):
                self.error("resources.bugtracker.mailto", f"{bt['mailto']!r} is not an email address")
        if "repository" in value and self.object("resources.repository", value["repository"]):
            repo = value["repository"]
            self.keys("resources.repository", repo, {"url", "web", "type"})
            for key in ("url", "web"):
                if key in repo:
                    self.uri(f"resources.repository.{key}", repo[key])
            if (
                "type" in repo
                and self.string("resources.repository.type", repo["type"])
                and not re.match(r"^[a-z]+$", repo["type"])
            ):
                self.error("resources.repository.type", "must be a lowercase word (git, svn, ...)")


def control_default_version(path):
    text = Path(path).read_text()
    match = re.search(r"^\s*default_version\s*=\s*'([^']*)'", text, re.MULTILINE)
    return match.group(1) if match else None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("meta", help="the META.json to check")
    parser.add_argument("--cargo-toml", help="Cargo.toml whose package version META.json must carry")
    parser.add_argument("--control", action="append", default=[],
                        help="a built control file whose default_version META.json must carry")
    parser.add_argument("--dist", help="the distribution's folder, where provides' files must exist")
    args = parser.parse_args()

    checker = Checker()
    try:
        meta = json.loads(Path(args.meta).read_text())
    except (OSError, ValueError) as e:
        print(f"{args.meta}: not readable as JSON: {e}", file=sys.stderr)
        return 1
    checker.check(meta)

    provided = meta.get("provides") if isinstance(meta, dict) else None
    provided = provided if isinstance(provided, dict) else {}
    versions = {"version": meta.get("version") if isinstance(meta, dict) else None}
    for name, ext in provided.items():
        if isinstance(ext, dict):
            versions[f"provides.{name}.version"] = ext.get("version")
    if args.cargo_toml:
        cargo = tomllib.loads(Path(args.cargo_toml).read_text())["package"]["version"]
        for where, v in versions.items():
            if v != cargo:
                checker.error(where, f"{v!r} is not Cargo.toml's version {cargo!r}")
    for control in args.control:
        default = control_default_version(control)
        if default is None:
            checker.error(control, "has no default_version")
        for where, v in versions.items():
            if default is not None and v != default:
                checker.error(where, f"{v!r} is not the default_version {default!r} of {control}")
    if args.dist:
        for name, ext in provided.items():
            for key in ("file", "docfile"):
                if (
                    isinstance(ext, dict)
                    and isinstance(ext.get(key), str)
                    and not (Path(args.dist) / ext[key]).is_file()
                ):
                    checker.error(f"provides.{name}.{key}", f"{ext[key]!r} is not a file of the distribution")

    for e in checker.errors:
        print(f"{args.meta}: {e}", file=sys.stderr)
    if checker.errors:
        return 1
    print(f"{args.meta}: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
