//! docs/reference.md against the catalogs: every member object of the extension and every
//! setting is listed, nothing listed is missing, and the stated signatures and properties are the
//! catalog's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use postgres::{Client, Row};

use super::reference_tables::{code_span, parse_args, plain, since_version, tables, Arg, Table};
use super::ROOT;
use crate::common::*;

/// Tables of these kinds list member objects; the others hold no objects (the version history,
/// server modes, a two-column layout table). Any other kind is refused, so that a table of
/// objects under a new heading cannot go unchecked.
const OBJECT_KINDS: &[&str] = &[
    "function",
    "aggregate",
    "procedure",
    "operator",
    "operator class",
    "cast",
    "type",
    "relation",
    "schema",
    "setting",
];
const OTHER_TABLES: &[&str] = &["version", "postgresql", ""];

/// The catalogs of the member objects this test knows how to find in docs/reference.md.
const MEMBER_CATALOGS: &[&str] = &[
    "pg_proc",
    "pg_type",
    "pg_operator",
    "pg_opclass",
    "pg_opfamily",
    "pg_cast",
    "pg_class",
    "pg_namespace",
];

/// The catalog's OID of a type name as written in the reference, in the extension's schema
/// if it is one of the extension's.
fn type_oid(c: &mut Client, name: &str) -> Result<u32, String> {
    c.query_one("SELECT to_regtype($1)::oid", &[&name])
        .map_err(|e| e.to_string())?
        .get::<_, Option<u32>>(0)
        .ok_or_else(|| format!("no type {name:?}"))
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// The OIDs of the member objects in catalog `class`.
fn members_of(members: &[(String, u32)], class: &str) -> BTreeSet<u32> {
    members
        .iter()
        .filter(|(k, _)| k == class)
        .map(|(_, o)| *o)
        .collect()
}

/// The object a catalog row describes, in words.
fn describe(c: &mut Client, class: &str, oid: u32) -> String {
    one_string(
        c,
        &format!("SELECT pg_describe_object('{class}'::regclass, {oid}, 0)"),
    )
}

/// The member objects the page lists, by catalog (routines with their line on the page).
#[derive(Default)]
struct Documented {
    procs: BTreeMap<u32, usize>,
    types: BTreeSet<u32>,
    operators: BTreeSet<u32>,
    classes: BTreeSet<u32>,
    families: BTreeSet<u32>,
    casts: BTreeSet<u32>,
    relations: BTreeSet<u32>,
    settings: BTreeSet<String>,
    namespaces: BTreeSet<u32>,
}

/// A row of one of the page's tables that names an object, as the checks of that object see it.
struct Entry<'a> {
    /// The table's kind: its first header cell.
    kind: &'a str,
    header: &'a [String],
    cells: &'a [String],
    /// The row's line on the page.
    line: usize,
    /// The object, as the row's first `code span` names it.
    entry: &'a str,
    /// `(PostgreSQL N+)` after it: it exists from that major version on.
    since: Option<u32>,
    /// The page says it exists only on later major versions than this server's.
    missing_here: bool,
}

impl<'a> Entry<'a> {
    /// Whether the table has the column `name`.
    fn has(&self, name: &str) -> bool {
        self.header.iter().any(|h| h == name)
    }

    /// The row's cell in the column `name`, if the table has it.
    fn at(&self, name: &str) -> Option<&'a str> {
        let cells = self.cells;
        self.header
            .iter()
            .position(|h| h == name)
            .and_then(|i| cells.get(i))
            .map(String::as_str)
    }

    /// `msg` at the row's line of the page.
    fn here(&self, msg: String) -> String {
        format!("docs/reference.md:{}: {msg}", self.line)
    }
}

/// The page held against the catalogs of a database with the extension: what the page lists so
/// far, and every problem found.
struct Reference {
    c: Client,
    major: u32,
    /// The extension's schema.
    schema: String,
    /// The extension's member objects: (catalog, OID).
    members: Vec<(String, u32)>,
    documented: Documented,
    problems: Vec<String>,
    /// The rows naming an object that were checked.
    entries: usize,
}

impl Reference {
    fn new(mut c: Client) -> Reference {
        let major = (server_version(&mut c) / 10000) as u32;
        let schema = one_string(
            &mut c,
            "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_objectid'",
        );
        let members: Vec<(String, u32)> = c
            .query(
                "SELECT classid::regclass::text, objid FROM pg_depend \
                 WHERE deptype = 'e' AND refclassid = 'pg_extension'::regclass \
                   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1)))
            .collect();
        let mut problems = Vec::new();
        for (class, _) in &members {
            if !MEMBER_CATALOGS.contains(&class.as_str()) {
                problems.push(format!(
                    "the extension has a member in {class}, which this test does not know how to \
                     find in docs/reference.md: extend the test and the page"
                ));
            }
        }
        Reference {
            c,
            major,
            schema,
            members,
            documented: Documented::default(),
            problems,
            entries: 0,
        }
    }

    /// Every row of `table`, if it is of a known kind.
    fn table(&mut self, table: &Table) {
        let kind = table.header[0].as_str();
        if !OBJECT_KINDS.contains(&kind) && !OTHER_TABLES.contains(&kind) {
            let line = table.rows.first().map_or(0, |r| r.0);
            self.problems.push(format!(
                "docs/reference.md:{line}: a table of unknown kind {kind:?} (known: {OBJECT_KINDS:?}; \
                 tables without objects: {OTHER_TABLES:?})"
            ));
            return;
        }
        for (line, row) in &table.rows {
            self.row(table, kind, *line, row);
        }
    }

    /// A row of `table`: its shape, and the object it names against the catalog.
    fn row(&mut self, table: &Table, kind: &str, line: usize, row: &[String]) {
        let here = |msg: String| format!("docs/reference.md:{line}: {msg}");
        if row.len() != table.header.len() {
            self.problems.push(here(format!(
                "{} cells, the header has {}",
                row.len(),
                table.header.len()
            )));
            return;
        }
        if row.last().is_some_and(|d| d.is_empty()) {
            self.problems
                .push(here("the last column (the description) is empty".into()));
        }
        let Some((entry, rest)) = code_span(&row[0]) else {
            if OBJECT_KINDS.contains(&kind) {
                self.problems.push(here(format!(
                    "a row of a {kind} table must name its object in `code`"
                )));
            }
            return;
        };
        let since = since_version(rest);
        let row = Entry {
            kind,
            header: &table.header,
            cells: row,
            line,
            entry,
            since,
            missing_here: since.is_some_and(|v| self.major < v),
        };
        match kind {
            "function" | "aggregate" | "procedure" => self.routine(&row),
            "operator" => self.operator(&row),
            "operator class" => self.operator_class(&row),
            "cast" => self.cast(&row),
            "type" if row.has("length") => self.base_type(&row),
            "relation" => self.relation(&row),
            "schema" => self.schema_entry(&row),
            "setting" => self.setting(&row),
            _ => {}
        }
    }

    /// A function, aggregate or procedure: its signature, kind, properties, arguments and result.
    fn routine(&mut self, row: &Entry) {
        let (entry, kind, since, missing_here) = (row.entry, row.kind, row.since, row.missing_here);
        let (major, schema) = (self.major, self.schema.clone());
        self.entries += 1;
        let Some(open) = entry.find('(') else {
            self.problems
                .push(row.here(format!("{entry:?} is not a signature")));
            return;
        };
        let name = &entry[..open];
        let args = match parse_args(entry[open + 1..].strip_suffix(')').unwrap_or("")) {
            Ok(a) => a,
            Err(e) => {
                self.problems.push(row.here(e));
                return;
            }
        };
        let types: Vec<&str> = args.iter().map(|a| a.ty.as_str()).collect();
        // Internals are listed with their schema, objectid_internal.
        let signature = if name.contains('.') {
            format!("{name}({})", types.join(", "))
        } else {
            format!("{schema}.{name}({})", types.join(", "))
        };
        let oid: Option<u32> = self
            .c
            .query_one("SELECT to_regprocedure($1)::oid", &[&signature])
            .map_err(|e| self.problems.push(row.here(format!("{signature}: {e}"))))
            .ok()
            .and_then(|r| r.get(0));
        let Some(oid) = oid else {
            if !missing_here {
                self.problems
                    .push(row.here(format!("no routine {signature}")));
            }
            return;
        };
        if missing_here {
            self.problems.push(row.here(format!(
                "{signature} exists on {major}, but the page says PostgreSQL {}+",
                since.unwrap()
            )));
        }
        if self.documented.procs.insert(oid, row.line).is_some() {
            self.problems
                .push(row.here(format!("{signature} is listed twice")));
        }
        let p = self.c
            .query_one(
                "SELECT prokind::text, provolatile::text, proisstrict, proparallel::text, \
                        proleakproof, prorettype, proretset, \
                        coalesce(proargnames, '{}')::text[], \
                        coalesce(proargmodes::text[], '{}'), pronargs::int4, \
                        pronargdefaults::int4, \
                        (SELECT coalesce(array_agg(n ORDER BY i), '{}') FROM unnest(proargnames, proargmodes::text[]) WITH ORDINALITY u(n, m, i) WHERE m = 't'), \
                        (SELECT coalesce(array_agg(t ORDER BY i), '{}') FROM unnest(proallargtypes, proargmodes::text[]) WITH ORDINALITY u(t, m, i) WHERE m = 't') \
                 FROM pg_proc WHERE oid = $1",
                &[&oid],
            )
            .unwrap();
        self.routine_properties(row, &signature, &p);
        self.routine_arguments(row, &signature, oid, &args, &p);
        // The result.
        if kind == "procedure" {
            return;
        }
        self.routine_result(row, &signature, oid, &p);
    }

    /// A routine's kind, and its properties where the table has their columns.
    fn routine_properties(&mut self, row: &Entry, signature: &str, p: &Row) {
        let kind = row.kind;
        let prokind: String = p.get(0);
        let want_kind = match kind {
            "function" => "f",
            "aggregate" => "a",
            _ => "p",
        };
        if prokind != want_kind {
            self.problems.push(row.here(format!(
                "{signature} is of kind {prokind:?} in the catalog, listed as a {kind}"
            )));
        }
        // Properties, where the table has the column.
        let volatility = match p.get::<_, String>(1).as_str() {
            "i" => "immutable",
            "s" => "stable",
            _ => "volatile",
        };
        let parallel = match p.get::<_, String>(3).as_str() {
            "s" => "safe",
            "r" => "restricted",
            _ => "unsafe",
        };
        for (column, actual) in [
            ("volatility", volatility),
            ("strict", yes_no(p.get(2))),
            ("parallel", parallel),
            ("leakproof", yes_no(p.get(4))),
        ] {
            match row.at(column) {
                Some(stated) if stated != actual => self.problems.push(row.here(format!(
                    "{signature}: {column} is {actual} in the catalog, the page says {stated}"
                ))),
                None if kind != "procedure" => {
                    self.problems.push(row.here(format!("no {column} column")))
                }
                _ => {}
            }
        }
    }

    /// The names and defaults of a routine's arguments.
    fn routine_arguments(&mut self, row: &Entry, signature: &str, oid: u32, args: &[Arg], p: &Row) {
        // Argument names and defaults.
        let names: Vec<String> = p.get(7);
        let modes: Vec<String> = p.get(8);
        let nargs: i32 = p.get(9);
        let ndefaults: i32 = p.get(10);
        let in_names: Vec<String> = names
            .iter()
            .enumerate()
            .filter(|(i, _)| modes.is_empty() || matches!(modes[*i].as_str(), "i" | "b" | "v"))
            .map(|(_, n)| n.clone())
            .collect();
        for (i, a) in args.iter().enumerate() {
            let catalog_name = in_names.get(i).filter(|n| !n.is_empty());
            if a.name.as_ref() != catalog_name {
                self.problems.push(row.here(format!(
                    "{signature}: argument {} is named {catalog_name:?} in the catalog, the page says {:?}",
                    i + 1,
                    a.name
                )));
            }
            let has_default = (i as i32) >= nargs - ndefaults;
            match (&a.default, has_default) {
                (Some(_), false) => self
                    .problems
                    .push(row.here(format!("{signature}: argument {} has no default", i + 1))),
                (None, true) => self.problems.push(row.here(format!(
                    "{signature}: argument {} has a default the page does not give",
                    i + 1
                ))),
                (Some(doc), true) => {
                    let catalog: String = self
                        .c
                        .query_one(
                            "SELECT pg_get_function_arg_default($1, $2)",
                            &[&oid, &(i as i32 + 1)],
                        )
                        .unwrap()
                        .get(0);
                    let ty = one_string(&mut self.c, &format!("SELECT format_type(proargtypes[{i}], NULL) FROM pg_proc WHERE oid = {oid}"));
                    let same = self
                        .c
                        .query_one(
                            &format!("SELECT ({doc})::{ty} IS NOT DISTINCT FROM ({catalog})::{ty}"),
                            &[],
                        )
                        .map(|r| r.get::<_, bool>(0));
                    if !matches!(same, Ok(true)) {
                        self.problems.push(row.here(format!(
                            "{signature}: argument {} defaults to {catalog}, the page says {doc} ({same:?})",
                            i + 1
                        )));
                    }
                }
                (None, false) => {}
            }
        }
    }

    /// What a routine returns.
    fn routine_result(&mut self, row: &Entry, signature: &str, oid: u32, p: &Row) {
        let Some(returns) = row.at("returns") else {
            self.problems.push(row.here("no returns column".into()));
            return;
        };
        let returns = plain(returns);
        let rettype: u32 = p.get(5);
        let retset: bool = p.get(6);
        let out_names: Vec<String> = p.get(11);
        let out_types: Vec<u32> = p.get(12);
        if let Some(columns) = returns.strip_prefix("TABLE") {
            let columns = columns
                .trim()
                .strip_prefix('(')
                .and_then(|c| c.strip_suffix(')'))
                .unwrap_or("");
            match parse_args(columns) {
                Ok(cols) => {
                    let doc_names: Vec<String> = cols
                        .iter()
                        .map(|a| a.name.clone().unwrap_or_default())
                        .collect();
                    let doc_types: Result<Vec<u32>, String> =
                        cols.iter().map(|a| type_oid(&mut self.c, &a.ty)).collect();
                    if !retset
                        || doc_names != out_names
                        || doc_types.as_ref().ok() != Some(&out_types)
                    {
                        let actual = one_string(
                            &mut self.c,
                            &format!("SELECT pg_get_function_result({oid})"),
                        );
                        self.problems.push(row.here(format!(
                            "{signature} returns {actual}, the page says {returns}"
                        )));
                    }
                }
                Err(e) => self.problems.push(row.here(e)),
            }
        } else {
            let (set, ty) = match returns.strip_prefix("SETOF ") {
                Some(t) => (true, t),
                None => (false, returns),
            };
            if set != retset
                || !out_names.is_empty()
                || type_oid(&mut self.c, ty).ok() != Some(rettype)
            {
                let actual = one_string(
                    &mut self.c,
                    &format!("SELECT pg_get_function_result({oid})"),
                );
                self.problems.push(row.here(format!(
                    "{signature} returns {actual}, the page says {returns}"
                )));
            }
        }
    }

    /// An operator: its function, commutator, negator, estimators, and whether it hashes and merges.
    fn operator(&mut self, row: &Entry) {
        let entry = row.entry;
        let schema = self.schema.clone();
        self.entries += 1;
        let words: Vec<&str> = entry.split_whitespace().collect();
        let [left, op, right] = words.as_slice() else {
            self.problems
                .push(row.here(format!("{entry:?}: write `left OP right`")));
            return;
        };
        let row_got = self.c.query_opt(
            "SELECT o.oid, p.proname::text, coalesce(com.oprname::text, ''), coalesce(neg.oprname::text, ''), \
                    o.oprrest::regproc::text, o.oprjoin::regproc::text, o.oprcanhash, o.oprcanmerge \
             FROM pg_operator o JOIN pg_proc p ON p.oid = o.oprcode \
             LEFT JOIN pg_operator com ON com.oid = o.oprcom \
             LEFT JOIN pg_operator neg ON neg.oid = o.oprnegate \
             WHERE o.oprname = $1 AND o.oprleft = to_regtype($2) AND o.oprright = to_regtype($3) \
               AND o.oprnamespace = $4::text::regnamespace",
            &[op, left, right, &schema],
        ).unwrap();
        let Some(o) = row_got else {
            self.problems.push(row.here(format!("no operator {entry}")));
            return;
        };
        if !self.documented.operators.insert(o.get(0)) {
            self.problems
                .push(row.here(format!("{entry}: listed twice")));
        }
        for (column, actual) in [
            ("function", o.get::<_, String>(1)),
            ("commutator", o.get(2)),
            ("negator", o.get(3)),
            ("restrict", o.get(4)),
            ("join", o.get(5)),
            ("hashes", yes_no(o.get(6)).to_string()),
            ("merges", yes_no(o.get(7)).to_string()),
        ] {
            match row.at(column).map(plain) {
                Some(stated) if stated == actual => {}
                stated => self.problems.push(row.here(format!(
                    "{entry}: {column} is {actual:?} in the catalog, the page says {stated:?}"
                ))),
            }
        }
    }

    /// An operator class: its family, and whether it is the default.
    fn operator_class(&mut self, row: &Entry) {
        let (entry, since, missing_here) = (row.entry, row.since, row.missing_here);
        let (major, schema) = (self.major, self.schema.clone());
        self.entries += 1;
        let method = row.at("access method").map(plain).unwrap_or("");
        let row_got = self
            .c
            .query_opt(
                "SELECT c.oid, f.oid, f.opfname::text, c.opcdefault FROM pg_opclass c \
             JOIN pg_am a ON a.oid = c.opcmethod JOIN pg_opfamily f ON f.oid = c.opcfamily \
             WHERE c.opcname = $1 AND a.amname = $2 AND c.opcnamespace = $3::text::regnamespace",
                &[&entry, &method, &schema],
            )
            .unwrap();
        let Some(o) = row_got else {
            if !missing_here {
                self.problems
                    .push(row.here(format!("no operator class {entry} for {method}")));
            }
            return;
        };
        if missing_here {
            self.problems.push(row.here(format!(
                "{entry} exists on {major}, but the page says PostgreSQL {}+",
                since.unwrap()
            )));
        }
        if !self.documented.classes.insert(o.get(0)) {
            self.problems
                .push(row.here(format!("{entry}: listed twice")));
        }
        self.documented.families.insert(o.get(1));
        for (column, actual) in [
            ("family", o.get::<_, String>(2)),
            ("default", yes_no(o.get(3)).to_string()),
        ] {
            match row.at(column).map(plain) {
                Some(stated) if stated == actual => {}
                stated => self.problems.push(row.here(format!("{entry} ({method}): {column} is {actual:?} in the catalog, the page says {stated:?}"))),
            }
        }
    }

    /// A cast: its function and context.
    fn cast(&mut self, row: &Entry) {
        let entry = row.entry;
        let schema = self.schema.clone();
        self.entries += 1;
        let Some((source, target)) = entry.split_once(" AS ") else {
            self.problems
                .push(row.here(format!("{entry:?}: write `source AS target`")));
            return;
        };
        let function = row.at("function").map(plain).unwrap_or("");
        let row_got = self
            .c
            .query_opt(
                "SELECT oid, castfunc, castcontext::text FROM pg_cast \
             WHERE castsource = to_regtype($1) AND casttarget = to_regtype($2)",
                &[&source.trim(), &target.trim()],
            )
            .unwrap();
        let Some(o) = row_got else {
            self.problems.push(row.here(format!("no cast {entry}")));
            return;
        };
        if !self.documented.casts.insert(o.get(0)) {
            self.problems
                .push(row.here(format!("{entry}: listed twice")));
        }
        let func: Option<u32> = self
            .c
            .query_one(
                "SELECT to_regprocedure($1)::oid",
                &[&format!("{schema}.{function}")],
            )
            .unwrap()
            .get(0);
        if func != Some(o.get::<_, u32>(1)) {
            self.problems
                .push(row.here(format!("{entry}: the cast's function is not {function}")));
        }
        let context = match o.get::<_, String>(2).as_str() {
            "e" => "explicit",
            "a" => "assignment",
            _ => "implicit",
        };
        if row.at("context").map(plain) != Some(context) {
            self.problems
                .push(row.here(format!("{entry}: context is {context} in the catalog")));
        }
    }

    /// A base type: its storage properties and I/O functions.
    fn base_type(&mut self, row: &Entry) {
        let entry = row.entry;
        let schema = self.schema.clone();
        self.entries += 1;
        let row_got = self.c.query_opt(
            "SELECT oid, typlen::text, typalign::text, typstorage::text, typcategory::text, \
                    typinput::regproc::text, typoutput::regproc::text, typreceive::regproc::text, typsend::regproc::text \
             FROM pg_type WHERE typname = $1 AND typnamespace = $2::text::regnamespace",
            &[&entry, &schema],
        ).unwrap();
        let Some(o) = row_got else {
            self.problems.push(row.here(format!("no type {entry}")));
            return;
        };
        if !self.documented.types.insert(o.get(0)) {
            self.problems
                .push(row.here(format!("{entry}: listed twice")));
        }
        let align = match o.get::<_, String>(2).as_str() {
            "c" => "char",
            "s" => "int2",
            "i" => "int4",
            _ => "double",
        };
        let storage = match o.get::<_, String>(3).as_str() {
            "p" => "plain",
            "e" => "external",
            "m" => "main",
            _ => "extended",
        };
        for (column, actual) in [
            ("length", o.get::<_, String>(1)),
            ("alignment", align.to_string()),
            ("storage", storage.to_string()),
            ("category", o.get(4)),
            ("input", o.get(5)),
            ("output", o.get(6)),
            ("receive", o.get(7)),
            ("send", o.get(8)),
        ] {
            match row.at(column).map(plain) {
                Some(stated) if stated == actual => {}
                stated => self.problems.push(row.here(format!(
                    "type {entry}: {column} is {actual:?} in the catalog, the page says {stated:?}"
                ))),
            }
        }
    }

    /// A relation: its kind and columns.
    fn relation(&mut self, row: &Entry) {
        let entry = row.entry;
        let schema = self.schema.clone();
        self.entries += 1;
        let (relation_schema, relation) = match entry.split_once('.') {
            Some((s, r)) => (s.to_string(), r),
            None => (schema.clone(), entry),
        };
        let row_got = self
            .c
            .query_opt(
                "SELECT c.oid, c.relkind::text, \
                    (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a \
                      WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) \
             FROM pg_class c WHERE c.relname = $1 AND c.relnamespace = $2::text::regnamespace",
                &[&relation, &relation_schema],
            )
            .unwrap();
        let Some(o) = row_got else {
            self.problems.push(row.here(format!("no relation {entry}")));
            return;
        };
        if !self.documented.relations.insert(o.get(0)) {
            self.problems
                .push(row.here(format!("{entry}: listed twice")));
        }
        let relkind = match o.get::<_, String>(1).as_str() {
            "r" => "table",
            "v" => "view",
            "c" => "composite type",
            other => other,
        }
        .to_string();
        if row.at("kind").map(plain) != Some(relkind.as_str()) {
            self.problems
                .push(row.here(format!("{entry} is a {relkind}")));
        }
        let columns: Vec<String> = o.get(2);
        let stated: Vec<&str> = row
            .at("columns")
            .unwrap_or("")
            .split(',')
            .map(plain)
            .collect();
        if stated != columns {
            self.problems
                .push(row.here(format!("{entry} has the columns {}", columns.join(", "))));
        }
    }

    /// A schema of the extension: its owner.
    fn schema_entry(&mut self, row: &Entry) {
        let entry = row.entry;
        self.entries += 1;
        let oid: Option<u32> = self
            .c
            .query_one("SELECT to_regnamespace($1)::oid", &[&entry])
            .unwrap()
            .get(0);
        match oid {
            Some(oid) if members_of(&self.members, "pg_namespace").contains(&oid) => {
                self.documented.namespaces.insert(oid);
                let owner = one_string(
                    &mut self.c,
                    &format!("SELECT nspowner::regrole::text FROM pg_namespace WHERE oid = {oid}"),
                );
                let stated = row.at("owner").map(plain);
                // The installing superuser, or the bootstrap superuser for a trusted install.
                if stated != Some("the installing superuser")
                    || !one_bool(
                        &mut self.c,
                        &format!("SELECT rolsuper FROM pg_roles WHERE rolname = '{owner}'"),
                    )
                {
                    self.problems.push(row.here(format!(
                        "schema {entry} is owned by {owner}, the page says {stated:?}"
                    )));
                }
            }
            _ => self
                .problems
                .push(row.here(format!("no schema {entry} of the extension"))),
        }
    }

    /// A setting: its type, default and context.
    fn setting(&mut self, row: &Entry) {
        let entry = row.entry;
        self.entries += 1;
        if !self.documented.settings.insert(entry.to_string()) {
            self.problems
                .push(row.here(format!("{entry}: listed twice")));
        }
        // A custom setting exists once the library is loaded.
        self.c.batch_execute("LOAD 'pg_objectid'").unwrap();
        let row_got = self
            .c
            .query_opt(
                "SELECT vartype, boot_val, context FROM pg_settings WHERE name = $1",
                &[&entry],
            )
            .unwrap();
        let Some(o) = row_got else {
            self.problems.push(row.here(format!("no setting {entry}")));
            return;
        };
        for (column, actual) in [
            ("type", o.get::<_, String>(0)),
            ("default", o.get(1)),
            ("context", o.get(2)),
        ] {
            match row.at(column).map(plain) {
                Some(stated) if stated == actual => {}
                stated => self.problems.push(row.here(format!(
                    "{entry}: {column} is {actual:?} in the catalog, the page says {stated:?}"
                ))),
            }
        }
    }

    /// Every member routine, operator, operator class and family, cast, relation, schema and type
    /// of the extension is listed.
    fn every_member_is_listed(&mut self) {
        for oid in members_of(&self.members, "pg_proc") {
            if !self.documented.procs.contains_key(&oid) {
                let row = self.c
                    .query_one(
                        "SELECT oid::regprocedure::text, pg_get_function_result(oid), provolatile::text, \
                                proisstrict, proparallel::text, proleakproof FROM pg_proc WHERE oid = $1",
                        &[&oid],
                    )
                    .unwrap();
                self.problems.push(format!(
                    "docs/reference.md does not list {} → {} (volatility {}, strict {}, parallel {}, leakproof {})",
                    row.get::<_, String>(0),
                    row.get::<_, Option<String>>(1).unwrap_or_default(),
                    row.get::<_, String>(2),
                    row.get::<_, bool>(3),
                    row.get::<_, String>(4),
                    row.get::<_, bool>(5)
                ));
            }
        }
        let documented = &self.documented;
        let covered: [(&str, &BTreeSet<u32>); 6] = [
            ("pg_namespace", &documented.namespaces),
            ("pg_operator", &documented.operators),
            ("pg_opclass", &documented.classes),
            ("pg_opfamily", &documented.families),
            ("pg_cast", &documented.casts),
            ("pg_class", &documented.relations),
        ];
        for (class, documented) in covered {
            for oid in members_of(&self.members, class) {
                if !documented.contains(&oid) {
                    let what = describe(&mut self.c, class, oid);
                    self.problems
                        .push(format!("docs/reference.md does not list the {what}"));
                }
            }
        }
        self.every_type_is_listed();
    }

    /// Types: base types are listed; array types and the row types of listed relations come with
    /// what they belong to.
    fn every_type_is_listed(&mut self) {
        let documented = &self.documented;
        for oid in members_of(&self.members, "pg_type") {
            let (elem, relid): (u32, u32) = {
                let r = self.c
                    .query_one(
                        "SELECT CASE WHEN t.typcategory = 'A' THEN t.typelem ELSE 0::oid END, t.typrelid \
                         FROM pg_type t WHERE t.oid = $1",
                        &[&oid],
                    )
                    .unwrap();
                (r.get(0), r.get(1))
            };
            let elem_relid: u32 = if elem != 0 {
                self.c
                    .query_one("SELECT typrelid FROM pg_type WHERE oid = $1", &[&elem])
                    .unwrap()
                    .get(0)
            } else {
                0
            };
            let ok = documented.types.contains(&oid)
                || documented.relations.contains(&relid)
                || documented.types.contains(&elem)
                || documented.relations.contains(&elem_relid);
            if !ok {
                let what = describe(&mut self.c, "pg_type", oid);
                self.problems
                    .push(format!("docs/reference.md does not list the {what}"));
            }
        }
    }

    /// Every setting of the library is listed.
    fn every_setting_is_listed(&mut self) {
        self.c.batch_execute("LOAD 'pg_objectid'").unwrap();
        let settings: BTreeSet<String> = self
            .c
            .query(
                "SELECT name FROM pg_settings WHERE name LIKE 'pg_objectid.%'",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        for s in settings.difference(&self.documented.settings) {
            self.problems
                .push(format!("docs/reference.md does not list the setting {s}"));
        }
    }

    /// The page says so; a SECURITY DEFINER function would need its own column and a reason.
    fn no_routine_is_security_definer(&mut self) {
        let definers: Vec<String> = self
            .c
            .query(
                "SELECT p.oid::regprocedure::text FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid \
                 WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e' AND p.prosecdef \
                   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pg_objectid')",
                &[],
            )
            .unwrap()
            .iter()
            .map(|r| r.get(0))
            .collect();
        if !definers.is_empty() {
            self.problems.push(format!(
                "docs/reference.md says no function is SECURITY DEFINER, but these are: {definers:?}"
            ));
        }
    }
}

#[test]
fn the_reference_lists_every_object_with_its_properties() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("docs/reference.md")).unwrap();
    let mut reference = Reference::new(database_with_extension("").client);
    for table in &tables(&text) {
        reference.table(table);
    }
    reference.every_member_is_listed();
    reference.every_setting_is_listed();
    reference.no_routine_is_security_definer();
    let Reference {
        major,
        problems,
        entries,
        ..
    } = reference;
    assert!(
        entries > 50,
        "only {entries} entries found in docs/reference.md's tables"
    );
    assert!(
        problems.is_empty(),
        "{} problem(s) in docs/reference.md on PostgreSQL {major}:\n{}",
        problems.len(),
        problems.join("\n")
    );
}
