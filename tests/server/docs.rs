//! The documentation against the product, so that the two cannot drift apart.
//!
//! - `every_sql_example_runs`: every ```sql block of README.md and docs/*.md runs through `psql`
//!   against this server, one fresh database per page, blocks in page order; annotations say which
//!   blocks must fail and with what SQLSTATE, which need something this server lacks, and which
//!   results are shown exactly (docs/testing.md, "The docs test", is the user's guide).
//! - `the_reference_lists_every_object_with_its_properties`: docs/reference.md against the
//!   catalogs: every member object of the extension and every setting is listed, nothing listed is
//!   missing, and the stated signatures and properties are the catalog's.
//! - `every_link_in_the_docs_resolves`: relative links and their #anchors point at files and
//!   headings that exist.
//! - `the_runner_*`: the runner itself, on pages written here, fails where it must: a test that
//!   could not fail would let the docs drift unnoticed.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

// ------------------------------------------------------------------------------------------------
// Pages and their code blocks

/// README.md and every docs/*.md, as (path relative to the repository, text), in a fixed order.
fn pages() -> Vec<(String, String)> {
    let mut paths = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    paths.extend(docs);
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(Path::new(ROOT).join(&p))
                .unwrap_or_else(|e| panic!("{p}: {e}"));
            (p, text)
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq)]
enum Directive {
    /// The block must fail, every error in it with this SQLSTATE.
    Error(String),
    /// Not run here; the reason is printed.
    Skip(String),
    /// Run (or check) only on servers whose major version satisfies this.
    Version(String, u32),
    /// Run only where this extension is available to CREATE EXTENSION.
    NeedsExtension(String),
    /// This (non-SQL) block is the exact output of the last statement of the SQL block before it.
    Output,
}

impl Directive {
    fn parse(text: &str) -> Result<Directive, String> {
        let text = text.trim();
        if let Some(reason) = text.strip_prefix("skip:") {
            let reason = reason.trim();
            if reason.is_empty() {
                return Err("`skip:` needs a reason".into());
            }
            return Ok(Directive::Skip(reason.to_string()));
        }
        if let Some(code) = text.strip_prefix("error ") {
            let code = code.trim();
            if code.len() != 5
                || !code
                    .chars()
                    .all(|c| c.is_ascii_digit() || c.is_ascii_uppercase())
            {
                return Err(format!(
                    "`error` needs a five-character SQLSTATE, not {code:?}"
                ));
            }
            return Ok(Directive::Error(code.to_string()));
        }
        if let Some(rest) = text.strip_prefix("version ") {
            let mut words = rest.split_whitespace();
            let (Some(op), Some(n), None) = (words.next(), words.next(), words.next()) else {
                return Err(format!(
                    "`version` needs an operator and a number: {rest:?}"
                ));
            };
            if !["=", ">=", ">", "<=", "<"].contains(&op) {
                return Err(format!("unknown version comparison {op:?}"));
            }
            let n = n
                .parse()
                .map_err(|_| format!("not a major version: {n:?}"))?;
            // A condition no supported version meets would skip the block everywhere, silently.
            if !SUPPORTED.clone().any(|v| version_holds(op, n, v)) {
                return Err(format!(
                    "`version {op} {n}` holds for none of PostgreSQL {}-{}",
                    SUPPORTED.start(),
                    SUPPORTED.end()
                ));
            }
            return Ok(Directive::Version(op.to_string(), n));
        }
        if let Some(name) = text.strip_prefix("needs extension ") {
            // A misspelt name would be missing on every server and skip the block everywhere.
            let name = name.trim();
            if !KNOWN_EXTENSIONS.contains(&name) {
                return Err(format!(
                    "`needs extension {name}`: not one of {KNOWN_EXTENSIONS:?} (add it there if it \
                     is real)"
                ));
            }
            return Ok(Directive::NeedsExtension(name.to_string()));
        }
        if text == "output" {
            return Ok(Directive::Output);
        }
        Err(format!(
            "unknown docs-test annotation {text:?} (known: error SQLSTATE, skip: reason, \
             version OP N, needs extension NAME, output)"
        ))
    }
}

/// A fenced code block: its opening line (1-based), info string, body lines (indentation of the
/// fence removed) and the annotations before it.
#[derive(Debug, Clone)]
struct Fence {
    line: usize,
    info: String,
    body: Vec<String>,
    directives: Vec<Directive>,
}

impl Fence {
    fn is_sql(&self) -> bool {
        self.info.split_whitespace().next() == Some("sql")
    }
}

const ANNOTATION: &str = "<!-- docs-test:";

/// The major versions the extension supports: a `version` annotation must hold for one of them.
const SUPPORTED: std::ops::RangeInclusive<u32> = 13..=18;

/// Extensions a `needs extension` annotation may name (contrib modules some test servers lack).
const KNOWN_EXTENSIONS: &[&str] = &["pgstattuple", "pageinspect", "pg_stat_statements"];

/// Info strings that mean SQL to a reader (and to GitHub's highlighter) but would not be run:
/// pages must write them as `sql`.
const SQL_LIKE: &[&str] = &["sql", "psql", "pgsql", "plpgsql", "postgres", "postgresql"];

/// The code blocks of a page with their annotations. An annotation is an HTML comment
/// `<!-- docs-test: … -->` on a line of its own; it belongs to the next code block, with nothing
/// but blank lines and other comments in between.
fn fences(text: &str) -> Result<Vec<Fence>, Vec<String>> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut errors = Vec::new();
    let mut pending: Vec<(usize, Directive)> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        // Blocks the runner would not see must not exist: every example is either run or
        // annotated with why not.
        if trimmed.starts_with("~~~") {
            errors.push(format!(
                "line {}: write code blocks with ``` fences, not ~~~",
                i + 1
            ));
        }
        if trimmed.starts_with('>') && trimmed.trim_start_matches(['>', ' ']).starts_with("```") {
            errors.push(format!(
                "line {}: no code blocks inside a blockquote",
                i + 1
            ));
        }
        if trimmed.starts_with("```") {
            let indent = line.len() - trimmed.len();
            let ticks = trimmed.chars().take_while(|&c| c == '`').count();
            let info = trimmed[ticks..].trim().to_string();
            let lang = info.split_whitespace().next().unwrap_or("");
            if lang != "sql" && SQL_LIKE.contains(&lang.to_ascii_lowercase().as_str()) {
                errors.push(format!(
                    "line {}: write ```sql, not ```{lang}: only sql blocks are run",
                    i + 1
                ));
            }
            let mut body = Vec::new();
            let mut j = i + 1;
            while j < lines.len() {
                let t = lines[j].trim();
                if t.len() >= ticks && t.chars().all(|c| c == '`') {
                    break;
                }
                let l = lines[j];
                let strip = l.len() - l.trim_start().len();
                body.push(l[strip.min(indent)..].to_string());
                j += 1;
            }
            if j == lines.len() {
                errors.push(format!("line {}: code block never closed", i + 1));
                break;
            }
            out.push(Fence {
                line: i + 1,
                info,
                body,
                directives: pending.drain(..).map(|(_, d)| d).collect(),
            });
            i = j + 1;
            continue;
        }
        if trimmed.starts_with("<!--")
            && trimmed.to_ascii_lowercase().contains("docs-test")
            && !trimmed.starts_with(ANNOTATION)
        {
            errors.push(format!(
                "line {}: a docs-test annotation is written exactly `<!-- docs-test: … -->`",
                i + 1
            ));
        } else if let Some(inner) = trimmed.strip_prefix(ANNOTATION) {
            match inner.trim_end().strip_suffix("-->") {
                Some(inner) => match Directive::parse(inner) {
                    Ok(d) => pending.push((i + 1, d)),
                    Err(e) => errors.push(format!("line {}: {e}", i + 1)),
                },
                None => errors.push(format!(
                    "line {}: a docs-test annotation must be one line, `<!-- docs-test: … -->`",
                    i + 1
                )),
            }
        } else if !(trimmed.is_empty() || (trimmed.starts_with("<!--") && trimmed.ends_with("-->")))
        {
            if let Some((at, _)) = pending.first() {
                errors.push(format!(
                    "line {at}: docs-test annotation not followed by a code block"
                ));
                pending.clear();
            }
        }
        i += 1;
    }
    if let Some((at, _)) = pending.first() {
        errors.push(format!(
            "line {at}: docs-test annotation not followed by a code block"
        ));
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// A line of SQL split into its code and its `--` comment (outside quotes), if any.
fn split_comment(line: &str) -> (&str, Option<&str>) {
    let bytes = line.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        match quote {
            Some(q) if b == q => quote = None,
            Some(_) => {}
            None if b == b'\'' || b == b'"' => quote = Some(b),
            None if b == b'-' && bytes.get(i + 1) == Some(&b'-') => {
                return (&line[..i], Some(&line[i + 2..]));
            }
            None => {}
        }
        i += 1;
    }
    (line, None)
}

/// A statement whose result the page states exactly: the body line that ends it, what the page
/// says it gives, and where the page says so.
#[derive(Debug, Clone)]
struct Check {
    /// Index in the block's body of the line whose final `;` ends the statement.
    target: usize,
    expected: Vec<String>,
    /// `→` comment (unaligned, ` | ` between columns, `; ` between rows) or an output block.
    kind: CheckKind,
    doc_line: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum CheckKind {
    Arrow,
    /// psql's aligned output; `header` when the page shows the column names and the dashes.
    Output {
        header: bool,
    },
}

const ARROW: &str = "→";

/// The `-- → result` comments of a SQL block. The comment follows the statement's final `;` on
/// the same line, or stands on the line after it.
fn arrow_checks(fence: &Fence) -> Result<Vec<Check>, Vec<String>> {
    let mut checks = Vec::new();
    let mut errors = Vec::new();
    for (k, line) in fence.body.iter().enumerate() {
        let doc_line = fence.line + 1 + k;
        let (code, comment) = split_comment(line);
        if let Some(c) = comment.map(str::trim_start) {
            // A result written with another arrow would look checked and not be.
            if ["->", "=>", "⇒", "⟶", "➔"].iter().any(|a| c.starts_with(a)) {
                errors.push(format!(
                    "line {doc_line}: write a stated result as `-- → result`, with that arrow"
                ));
                continue;
            }
        }
        let Some(expected) = comment.and_then(|c| c.trim_start().strip_prefix(ARROW)) else {
            continue;
        };
        let expected = expected.trim().to_string();
        let target = if code.trim().is_empty() {
            match (0..k).rev().find(|&p| !fence.body[p].trim().is_empty()) {
                Some(p) => p,
                None => {
                    errors.push(format!("line {doc_line}: `-- →` before any statement"));
                    continue;
                }
            }
        } else {
            k
        };
        if !split_comment(&fence.body[target])
            .0
            .trim_end()
            .ends_with(';')
        {
            errors.push(format!(
                "line {doc_line}: `-- →` must follow the `;` that ends a statement (on its line \
                 or the line before)"
            ));
            continue;
        }
        checks.push(Check {
            target,
            expected: vec![expected],
            kind: CheckKind::Arrow,
            doc_line,
        });
    }
    if errors.is_empty() {
        Ok(checks)
    } else {
        Err(errors)
    }
}

fn version_holds(op: &str, n: u32, server: u32) -> bool {
    match op {
        "=" => server == n,
        ">=" => server >= n,
        ">" => server > n,
        "<=" => server <= n,
        "<" => server < n,
        _ => unreachable!("checked when parsed"),
    }
}

/// What a server offers that annotations ask about.
struct Server {
    major: u32,
    extensions: BTreeSet<String>,
}

/// Why a block (or an output check) is not run on this server, if it is not.
fn skip_reason(directives: &[Directive], server: &Server) -> Option<String> {
    for d in directives {
        match d {
            Directive::Skip(reason) => return Some(reason.clone()),
            Directive::Version(op, n) if !version_holds(op, *n, server.major) => {
                return Some(format!(
                    "needs PostgreSQL {op} {n}, this is {}",
                    server.major
                ))
            }
            Directive::NeedsExtension(name) if !server.extensions.contains(name) => {
                return Some(format!("needs the {name} extension, not available here"))
            }
            _ => {}
        }
    }
    None
}

/// A SQL block as the runner will run it.
struct Runnable {
    fence: Fence,
    expect_error: Option<String>,
    checks: Vec<Check>,
}

/// The plan for one page: the blocks to run, in order, and what is skipped (doc line, reason).
struct PagePlan {
    blocks: Vec<Runnable>,
    skipped: Vec<(usize, String)>,
    creates_extension: bool,
}

fn plan_page(text: &str, server: &Server) -> Result<PagePlan, Vec<String>> {
    let fences = fences(text)?;
    let mut errors = Vec::new();
    let mut blocks: Vec<Runnable> = Vec::new();
    let mut skipped = Vec::new();
    let mut creates_extension = false;
    // The index in `blocks` of the previous fence if it was a SQL block that runs; None if it
    // was skipped; absent if the previous fence was not SQL.
    let mut previous_sql: Option<Option<usize>> = None;
    for fence in fences {
        let d = &fence.directives;
        if fence.is_sql() {
            if d.contains(&Directive::Output) {
                errors.push(format!(
                    "line {}: `output` belongs before the output block, not the SQL",
                    fence.line
                ));
            }
            let errs: Vec<&String> = d
                .iter()
                .filter_map(|x| match x {
                    Directive::Error(c) => Some(c),
                    _ => None,
                })
                .collect();
            if errs.len() > 1 {
                errors.push(format!("line {}: more than one `error`", fence.line));
            }
            let body = fence.body.join("\n").to_lowercase();
            if body
                .split_whitespace()
                .collect::<Vec<_>>()
                .windows(3)
                .any(|w| {
                    w[0] == "create"
                        && w[1] == "extension"
                        && w[2].trim_end_matches(';') == "pg_objectid"
                })
            {
                creates_extension = true;
            }
            let checks = match arrow_checks(&fence) {
                Ok(c) => c,
                Err(e) => {
                    errors.extend(e);
                    Vec::new()
                }
            };
            if let Some(reason) = skip_reason(d, server) {
                skipped.push((fence.line, reason));
                previous_sql = Some(None);
                continue;
            }
            blocks.push(Runnable {
                expect_error: errs.first().map(|c| c.to_string()),
                fence,
                checks,
            });
            previous_sql = Some(Some(blocks.len() - 1));
        } else {
            let output = d.contains(&Directive::Output);
            if d.iter()
                .any(|x| !matches!(x, Directive::Output | Directive::Version(..)))
            {
                errors.push(format!(
                    "line {}: only `output` and `version` apply to a block that is not SQL",
                    fence.line
                ));
            }
            if !output && !d.is_empty() {
                errors.push(format!("line {}: `version` without `output`", fence.line));
            }
            if output {
                match previous_sql {
                    None => errors.push(format!(
                        "line {}: `output` must follow a SQL block directly",
                        fence.line
                    )),
                    Some(None) => skipped.push((fence.line, "its SQL block is skipped".into())),
                    Some(Some(index)) => {
                        if let Some(reason) = skip_reason(d, server) {
                            skipped.push((fence.line, reason));
                        } else {
                            let block = &mut blocks[index];
                            let last = (0..block.fence.body.len()).rev().find(|&k| {
                                split_comment(&block.fence.body[k])
                                    .0
                                    .trim_end()
                                    .ends_with(';')
                            });
                            match last {
                                Some(target) if block.checks.iter().all(|c| c.target != target) => {
                                    let header = fence.body.get(1).is_some_and(|l| {
                                        let l = l.trim();
                                        !l.is_empty() && l.chars().all(|c| c == '-' || c == '+')
                                    });
                                    block.checks.push(Check {
                                        target,
                                        expected: fence.body.clone(),
                                        kind: CheckKind::Output { header },
                                        doc_line: fence.line,
                                    });
                                }
                                Some(_) => errors.push(format!(
                                    "line {}: the statement already has a `-- →` result",
                                    fence.line
                                )),
                                None => errors.push(format!(
                                    "line {}: the SQL block before has no statement ending in `;`",
                                    fence.line
                                )),
                            }
                        }
                    }
                }
            }
            previous_sql = None;
        }
    }
    if errors.is_empty() {
        Ok(PagePlan {
            blocks,
            skipped,
            creates_extension,
        })
    } else {
        Err(errors)
    }
}

// ------------------------------------------------------------------------------------------------
// Running a page through psql

/// The psql to run pages with: PG_OBJECTID_TEST_PSQL, else the one beside the server's own
/// programs (so the client is the server's version, as a reader's would be), else psql on PATH.
fn psql_program(client: &mut postgres::Client) -> PathBuf {
    if let Ok(p) = std::env::var("PG_OBJECTID_TEST_PSQL") {
        return PathBuf::from(p);
    }
    // The pg_config view reports where the running server's programs are (superusers only).
    if let Ok(row) = client.query_one("SELECT setting FROM pg_config WHERE name = 'BINDIR'", &[]) {
        let path = Path::new(&row.get::<_, String>(0)).join("psql");
        if path.exists() {
            return path;
        }
    }
    PathBuf::from("psql")
}

fn server_info(client: &mut postgres::Client) -> Server {
    let major = (server_version(client) / 10000) as u32;
    let extensions = client
        .query("SELECT name::text FROM pg_available_extensions", &[])
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    Server { major, extensions }
}

/// What one page's run found.
#[derive(Default)]
struct PageReport {
    failures: Vec<String>,
    skipped: Vec<(usize, String)>,
    blocks_run: usize,
    results_checked: usize,
}

/// A database name for a page: `docs_` and the path's letters and digits.
fn database_for(page: &str) -> String {
    let mut name: String = format!("docs_{page}")
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    name.truncate(63);
    name
}

/// Runs the SQL blocks of `text` (the page `page`) in a fresh database, through `psql`.
fn run_page(page: &str, text: &str, psql: &Path, server: &Server) -> PageReport {
    let mut report = PageReport::default();
    let plan = match plan_page(text, server) {
        Ok(plan) => plan,
        Err(errors) => {
            report
                .failures
                .extend(errors.into_iter().map(|e| format!("{page}: {e}")));
            return report;
        }
    };
    report.skipped = plan.skipped;
    if plan.blocks.is_empty() {
        return report;
    }
    let dbname = database_for(page);
    let mut client = fresh_database(&dbname);
    if !plan.creates_extension {
        client
            .batch_execute("CREATE EXTENSION pg_objectid")
            .unwrap();
    }
    drop(client);

    let work = std::env::temp_dir().join(format!("pg_objectid-{dbname}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    let script_path = work.join("page.sql");

    // The script, and for each of its lines the page line it came from.
    let mut script: Vec<String> = Vec::new();
    let mut origin: Vec<usize> = Vec::new();
    let mut emit = |script: &mut Vec<String>, line: String, from: usize| {
        script.push(line);
        origin.push(from);
    };
    // Verbose errors carry the SQLSTATE; the context lines of PL/pgSQL errors are noise here.
    emit(&mut script, "\\set VERBOSITY verbose".into(), 0);
    emit(&mut script, "\\set SHOW_CONTEXT never".into(), 0);
    // (first script line, last script line, block index) of each block.
    let mut ranges: Vec<(usize, usize, usize)> = Vec::new();
    let mut outputs: Vec<(PathBuf, usize, usize)> = Vec::new(); // (file, block, check)
    for (b, block) in plan.blocks.iter().enumerate() {
        if block.expect_error.is_some() {
            emit(
                &mut script,
                "\\set ON_ERROR_STOP 0".into(),
                block.fence.line,
            );
        }
        let first = script.len() + 1;
        for (k, line) in block.fence.body.iter().enumerate() {
            let doc_line = block.fence.line + 1 + k;
            match block.checks.iter().position(|c| c.target == k) {
                Some(c) => {
                    // `\g` instead of the final `;` sends the statement and writes its result to
                    // a file, formatted for comparing whatever the page set with \pset.
                    // `\g` takes the rest of the line as the file name, so the comment goes.
                    let code = split_comment(line).0.trim_end();
                    let code = &code[..code.len() - 1];
                    let file = work.join(format!("result-{b}-{c}"));
                    let options = match block.checks[c].kind {
                        CheckKind::Arrow => {
                            "format=unaligned tuples_only=on fieldsep=' | ' null=NULL expanded=off footer=off"
                        }
                        CheckKind::Output { header: true } => {
                            "format=aligned tuples_only=off expanded=off footer=off"
                        }
                        CheckKind::Output { header: false } => {
                            "format=aligned tuples_only=on expanded=off footer=off"
                        }
                    };
                    emit(
                        &mut script,
                        format!("{code} \\g ({options}) {}", file.display()),
                        doc_line,
                    );
                    outputs.push((file, b, c));
                }
                None => emit(&mut script, line.clone(), doc_line),
            }
        }
        ranges.push((first, script.len(), b));
        if block.expect_error.is_some() {
            emit(
                &mut script,
                "\\set ON_ERROR_STOP 1".into(),
                block.fence.line,
            );
        }
    }
    // Reaching this line shows that psql ran the whole page.
    emit(&mut script, "\\echo docs-test: end of page".into(), 0);
    std::fs::write(&script_path, script.join("\n") + "\n").unwrap();

    let output = Command::new(psql)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-f"])
        .arg(&script_path)
        .arg(format!("{} dbname={dbname}", dsn()))
        // Results shown in the docs are in UTC and ISO dates.
        .env("PGTZ", "UTC")
        .env("PGDATESTYLE", "ISO, MDY")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", psql.display()));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);

    // psql reports each error as `psql:FILE:LINE: ERROR:  SQLSTATE: message` (verbose), or
    // `psql:FILE:LINE: error: …` for its own.
    let prefix = format!("psql:{}:", script_path.display());
    let mut errors: Vec<(usize, Option<String>, String)> = Vec::new();
    for l in stderr.lines() {
        let Some(rest) = l.strip_prefix(&prefix) else {
            continue;
        };
        let Some((n, message)) = rest.split_once(": ") else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else { continue };
        let message = message.trim();
        for level in ["ERROR:", "FATAL:", "PANIC:"] {
            if let Some(m) = message.strip_prefix(level) {
                let m = m.trim();
                let code = m
                    .split_once(": ")
                    .filter(|(c, _)| c.len() == 5 && c.chars().all(|x| x.is_ascii_alphanumeric()))
                    .map(|(c, _)| c.to_string());
                errors.push((n, code, m.to_string()));
            }
        }
        if message.starts_with("error:") || message.starts_with("invalid command") {
            errors.push((n, None, message.to_string()));
        }
    }
    let block_of = |n: usize| {
        ranges
            .iter()
            .find(|(f, l, _)| (*f..=*l).contains(&n))
            .map(|r| r.2)
    };
    let doc_line_of = |n: usize| origin.get(n.wrapping_sub(1)).copied().unwrap_or(0);

    for (b, block) in plan.blocks.iter().enumerate() {
        report.blocks_run += 1;
        let mine: Vec<&(usize, Option<String>, String)> =
            errors.iter().filter(|e| block_of(e.0) == Some(b)).collect();
        match &block.expect_error {
            Some(want) => {
                if mine.is_empty() && stdout.contains("docs-test: end of page") {
                    report.failures.push(format!(
                        "{page}:{}: the block should fail with SQLSTATE {want}, but it succeeded",
                        block.fence.line
                    ));
                }
                for (n, code, message) in mine {
                    if code.as_deref() != Some(want.as_str()) {
                        report.failures.push(format!(
                            "{page}:{}: expected SQLSTATE {want}, got {}: {message}",
                            doc_line_of(*n),
                            code.as_deref().unwrap_or("no SQLSTATE")
                        ));
                    }
                }
            }
            None => {
                for (n, _, message) in mine {
                    report
                        .failures
                        .push(format!("{page}:{}: {message}", doc_line_of(*n)));
                }
            }
        }
    }
    for (n, _, message) in errors.iter().filter(|e| block_of(e.0).is_none()) {
        report
            .failures
            .push(format!("{page}:{}: {message}", doc_line_of(*n)));
    }
    if !stdout.contains("docs-test: end of page") && report.failures.is_empty() {
        report.failures.push(format!(
            "{page}: psql stopped before the end of the page (exit {:?}): {stderr}",
            output.status.code()
        ));
    }

    for (file, b, c) in outputs {
        let check = &plan.blocks[b].checks[c];
        report.results_checked += 1;
        let Ok(got) = std::fs::read_to_string(&file) else {
            // Already reported if the statement failed; otherwise psql never reached it.
            if report.failures.is_empty() {
                report.failures.push(format!(
                    "{page}:{}: the statement whose result is shown here did not run",
                    check.doc_line
                ));
            }
            continue;
        };
        let trimmed = |lines: &mut Vec<String>| {
            for l in lines.iter_mut() {
                *l = l.trim_end().to_string();
            }
            while lines.last().is_some_and(|l| l.is_empty()) {
                lines.pop();
            }
        };
        let mut got: Vec<String> = got.lines().map(str::to_string).collect();
        trimmed(&mut got);
        let (got, mut want) = match check.kind {
            CheckKind::Arrow => (vec![got.join("; ")], check.expected.clone()),
            CheckKind::Output { .. } => (got, check.expected.clone()),
        };
        trimmed(&mut want);
        if got != want {
            report.failures.push(format!(
                "{page}:{}: the page shows\n{}\nbut the statement gives\n{}",
                check.doc_line,
                want.join("\n"),
                got.join("\n")
            ));
        }
    }
    // The failures say what went wrong and where; the script and result files are not kept.
    let _ = std::fs::remove_dir_all(&work);
    report
}

/// Writes straight to the test process's stderr: cargo's test harness captures `eprintln!` of a
/// passing test, and the skipped examples must be visible in every run.
fn announce(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[test]
fn every_sql_example_runs() {
    let mut admin = connect_to("postgres");
    let psql = psql_program(&mut admin);
    let server = server_info(&mut admin);
    drop(admin);
    let pages = pages();
    let total_sql_blocks: usize = pages
        .iter()
        .map(|(_, text)| {
            fences(text)
                .map(|f| f.iter().filter(|f| f.is_sql()).count())
                .unwrap_or(0)
        })
        .sum();
    // Pages run three at a time, each in a database of its own: the long walk-through of
    // docs/migration.md beside the others, without taking many of the test server's
    // connections from the tests running meanwhile.
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut reports: Vec<(usize, String, PageReport)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let (psql, server, pages, next) = (&psql, &server, &pages, &next);
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((page, text)) = pages.get(i) else {
                            return done;
                        };
                        done.push((i, page.clone(), run_page(page, text, psql, server)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    reports.sort_by_key(|r| r.0);
    let reports: Vec<(String, PageReport)> = reports.into_iter().map(|(_, p, r)| (p, r)).collect();
    let mut failures = Vec::new();
    let mut summary = String::new();
    let (mut run, mut checked, mut skipped) = (0, 0, 0);
    for (page, report) in &reports {
        for (line, reason) in &report.skipped {
            summary.push_str(&format!(
                "docs-test: PostgreSQL {}: skipped {page}:{line}: {reason}\n",
                server.major
            ));
        }
        run += report.blocks_run;
        checked += report.results_checked;
        skipped += report.skipped.len();
        failures.extend(report.failures.iter().cloned());
    }
    summary.push_str(&format!(
        "docs-test: PostgreSQL {}: {run} SQL blocks run on {} pages with {}, {checked} results \
         compared, {skipped} skipped\n",
        server.major,
        reports.len(),
        psql.display()
    ));
    announce(&summary);
    // Every SQL block is accounted for: run, or skipped with its reason.
    let skipped_sql: usize = reports
        .iter()
        .map(|(_, r)| {
            r.skipped
                .iter()
                .filter(|(_, reason)| reason != "its SQL block is skipped")
                .count()
        })
        .sum();
    assert!(
        failures.is_empty(),
        "{} problem(s) in the docs' SQL examples:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
    assert!(run > 0, "no SQL block found in README.md and docs/");
    assert!(
        run + skipped_sql >= total_sql_blocks,
        "{run} run + {skipped_sql} skipped < {total_sql_blocks}"
    );
}

// ------------------------------------------------------------------------------------------------
// The runner on pages written here: each must fail where the docs would be wrong.

fn self_test_page(name: &str, text: &str) -> PageReport {
    let mut admin = connect_to("postgres");
    let psql = psql_program(&mut admin);
    let server = server_info(&mut admin);
    run_page(name, text, &psql, &server)
}

#[test]
fn the_runner_passes_a_correct_page() {
    let page = "\
# A page

<!-- docs-test: error 22P02 -->
```sql
SELECT 'nope'::objectid;
```

```sql
CREATE TABLE t (id objectid PRIMARY KEY DEFAULT gen_objectid(), n int);
INSERT INTO t (n) VALUES (1), (2);
SELECT count(*) FROM t;   -- → 2
SELECT n, NULL::text AS nothing
  FROM t ORDER BY n;
-- → 1 | NULL; 2 | NULL
SELECT objectid_timestamp('507f1f77bcf86cd799439011');
```

<!-- docs-test: output -->
```text
 2012-10-17 21:13:27+00
```

```sql
SELECT 1 AS one;
```

<!-- docs-test: output -->
```
 one
-----
   1
```

<!-- docs-test: version < 13 -->
```sql
SELECT this is not run;
```

<!-- docs-test: skip: needs a second server -->
```sql
SELECT nor is this;
```
";
    // A version this server is not (a condition no supported version meets is refused).
    let major = server_info(&mut connect_to("postgres")).major;
    let other = if major == 13 { 14 } else { 13 };
    let page = page.replace("version < 13", &format!("version = {other}"));
    let r = self_test_page("self_test_correct", &page);
    assert!(r.failures.is_empty(), "{:#?}", r.failures);
    assert_eq!(r.blocks_run, 3);
    assert_eq!(r.results_checked, 4);
    let reasons: Vec<&str> = r.skipped.iter().map(|s| s.1.as_str()).collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(
        reasons[0].starts_with(&format!("needs PostgreSQL = {other}")),
        "{reasons:?}"
    );
    assert_eq!(reasons[1], "needs a second server");
}

#[test]
fn the_runner_names_the_line_of_a_failing_example() {
    let page = "\
Text.

```sql
CREATE TABLE t (id objectid);
INSERT INTO t VALUES ('507f1f77bcf86cd79943901');
```
";
    let r = self_test_page("self_test_failing", page);
    assert_eq!(r.failures.len(), 1, "{:#?}", r.failures);
    assert!(
        r.failures[0]
            .starts_with("self_test_failing:5: 22P02: invalid input syntax for type objectid"),
        "{:#?}",
        r.failures
    );
}

#[test]
fn the_runner_checks_sqlstates_results_and_outputs() {
    let wrong_state = "\
<!-- docs-test: error 22P02 -->
```sql
SELECT objectid_from_time('1969-01-01 00:00:00+00');
```
";
    let r = self_test_page("self_test_state", wrong_state);
    assert_eq!(r.failures.len(), 1, "{:#?}", r.failures);
    assert!(
        r.failures[0].contains("expected SQLSTATE 22P02, got 22008"),
        "{:#?}",
        r.failures
    );

    let no_error = "\
<!-- docs-test: error 22P02 -->
```sql
SELECT '507f1f77bcf86cd799439011'::objectid;
```
";
    let r = self_test_page("self_test_no_error", no_error);
    assert_eq!(r.failures.len(), 1, "{:#?}", r.failures);
    assert!(
        r.failures[0].contains("should fail with SQLSTATE 22P02, but it succeeded"),
        "{:#?}",
        r.failures
    );

    let wrong_result = "\
```sql
SELECT objectid_timestamp('507f1f77bcf86cd799439011');   -- → 2012-10-17 21:13:28+00
SELECT 1;
```
";
    let r = self_test_page("self_test_result", wrong_result);
    assert_eq!(r.failures.len(), 1, "{:#?}", r.failures);
    assert!(r.failures[0].starts_with("self_test_result:2: the page shows\n2012-10-17 21:13:28+00\nbut the statement gives\n2012-10-17 21:13:27+00"), "{:#?}", r.failures);

    let wrong_output = "\
```sql
SELECT 'a' AS x;
```

<!-- docs-test: output -->
```
 b
```
";
    let r = self_test_page("self_test_output", wrong_output);
    assert_eq!(r.failures.len(), 1, "{:#?}", r.failures);
    assert!(
        r.failures[0].starts_with("self_test_output:6: the page shows"),
        "{:#?}",
        r.failures
    );

    // An error in a block that expects none stops the page: later results are not compared
    // against nothing, and the error is what is reported.
    let stops = "\
```sql
SELECT no_such_function();
SELECT 1;   -- → 1
```
";
    let r = self_test_page("self_test_stops", stops);
    assert_eq!(r.failures.len(), 1, "{:#?}", r.failures);
    assert!(
        r.failures[0].starts_with("self_test_stops:2: 42883"),
        "{:#?}",
        r.failures
    );
}

#[test]
fn the_runner_refuses_malformed_annotations() {
    let server = Server {
        major: 18,
        extensions: BTreeSet::new(),
    };
    for (page, problem) in [
        (
            "<!-- docs-test: error 22P0 -->\n```sql\nSELECT 1;\n```\n",
            "five-character SQLSTATE",
        ),
        (
            "<!-- docs-test: skipp: typo -->\n```sql\nSELECT 1;\n```\n",
            "unknown docs-test annotation",
        ),
        (
            "<!-- docs-test: skip: x -->\nA paragraph.\n\n```sql\nSELECT 1;\n```\n",
            "not followed by a code block",
        ),
        (
            "<!-- docs-test: output -->\n```text\n1\n```\n",
            "must follow a SQL block directly",
        ),
        ("```sql\nSELECT 1   -- → 1\n```\n", "must follow the `;`"),
        (
            "<!-- docs-test: version >= x -->\n```sql\nSELECT 1;\n```\n",
            "not a major version",
        ),
        ("```sql\nSELECT 1;\n", "never closed"),
        ("```SQL\nSELECT 1;\n```\n", "write ```sql"),
        ("```postgresql\nSELECT 1;\n```\n", "write ```sql"),
        ("~~~sql\nSELECT 1;\n~~~\n", "not ~~~"),
        ("> ```sql\n> SELECT 1;\n> ```\n", "inside a blockquote"),
        ("```sql\nSELECT 1;   -- -> 2\n```\n", "with that arrow"),
        ("```sql\nSELECT 1;   -- => 2\n```\n", "with that arrow"),
        (
            "<!--docs-test: output-->\n```sql\nSELECT 1;\n```\n",
            "written exactly",
        ),
        (
            "<!-- docs-test: version >= 19 -->\n```sql\nSELECT 1;\n```\n",
            "holds for none",
        ),
        (
            "<!-- docs-test: needs extension pgstatuple -->\n```sql\nSELECT 1;\n```\n",
            "not one of",
        ),
    ] {
        match plan_page(page, &server) {
            Ok(_) => panic!("accepted {page:?}"),
            Err(errors) => assert!(
                errors.iter().any(|e| e.contains(problem)),
                "{page:?}: {errors:?}"
            ),
        }
    }
}

// ------------------------------------------------------------------------------------------------
// docs/reference.md against the catalogs

/// A Markdown table: its header cells (lowercased) and rows, each with its page line.
struct Table {
    header: Vec<String>,
    rows: Vec<(usize, Vec<String>)>,
}

/// Cells of a table row; `|` inside backticks does not split.
fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    let mut out = vec![String::new()];
    let mut code = false;
    for c in inner.chars() {
        match c {
            '`' => {
                code = !code;
                out.last_mut().unwrap().push(c);
            }
            '|' if !code => out.push(String::new()),
            _ => out.last_mut().unwrap().push(c),
        }
    }
    out.into_iter().map(|c| c.trim().to_string()).collect()
}

fn tables(text: &str) -> Vec<Table> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut in_code = false;
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if t.starts_with("```") {
            in_code = !in_code;
        }
        let separator = |l: &str| {
            let l = l.trim();
            l.starts_with('|') && l.chars().all(|c| matches!(c, '|' | '-' | ':' | ' '))
        };
        if !in_code && t.starts_with('|') && i + 1 < lines.len() && separator(lines[i + 1]) {
            let header = cells(t).into_iter().map(|c| c.to_lowercase()).collect();
            let mut rows = Vec::new();
            let mut j = i + 2;
            while j < lines.len() && lines[j].trim().starts_with('|') {
                rows.push((j + 1, cells(lines[j])));
                j += 1;
            }
            out.push(Table { header, rows });
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

/// The text of the first `code span` of a cell, and what follows it.
fn code_span(cell: &str) -> Option<(&str, &str)> {
    let start = cell.find('`')? + 1;
    let len = cell[start..].find('`')?;
    Some((&cell[start..start + len], &cell[start + len + 1..]))
}

/// The cell without backticks around it.
fn plain(cell: &str) -> &str {
    cell.trim().trim_matches('`').trim()
}

/// Splits on commas outside parentheses and quotes.
fn split_top_level(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut quote = false;
    let mut current = String::new();
    for c in s.chars() {
        match c {
            '\'' => quote = !quote,
            '(' if !quote => depth += 1,
            ')' if !quote => depth -= 1,
            ',' if !quote && depth == 0 => {
                out.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if !current.trim().is_empty() {
        out.push(current.trim().to_string());
    }
    out
}

/// `(PostgreSQL 14+)` after an entry: it exists from that major version on.
fn since_version(rest: &str) -> Option<u32> {
    let at = rest.find("PostgreSQL ")? + "PostgreSQL ".len();
    let digits: String = rest[at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect();
    rest[at + digits.len()..]
        .starts_with('+')
        .then(|| digits.parse().ok())
        .flatten()
}

/// One documented argument: its name (if the page gives one), type and default expression.
struct Arg {
    name: Option<String>,
    ty: String,
    default: Option<String>,
}

fn parse_args(list: &str) -> Result<Vec<Arg>, String> {
    split_top_level(list)
        .into_iter()
        .map(|a| {
            let (decl, default) = match a.find(" DEFAULT ") {
                Some(at) => (&a[..at], Some(a[at + " DEFAULT ".len()..].trim().to_string())),
                None => (a.as_str(), None),
            };
            let words: Vec<&str> = decl.split_whitespace().collect();
            match words.as_slice() {
                [ty] => Ok(Arg { name: None, ty: ty.to_string(), default }),
                [name, ty] => Ok(Arg { name: Some(name.to_string()), ty: ty.to_string(), default }),
                _ => Err(format!("cannot read the argument {a:?} (write `name type`, with one-word type names such as timestamptz)")),
            }
        })
        .collect()
}

/// The catalog's OID of a type name as written in the reference, in the extension's schema
/// if it is one of the extension's.
fn type_oid(c: &mut postgres::Client, name: &str) -> Result<u32, String> {
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

#[test]
fn the_reference_lists_every_object_with_its_properties() {
    let text = std::fs::read_to_string(Path::new(ROOT).join("docs/reference.md")).unwrap();
    let mut c = fresh_db("t_docs_reference");
    let major = (server_version(&mut c) / 10000) as u32;
    let schema = one_string(
        &mut c,
        "SELECT extnamespace::regnamespace::text FROM pg_extension WHERE extname = 'pg_objectid'",
    );
    let mut problems: Vec<String> = Vec::new();
    // Member objects, by catalog and OID.
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
    let members_of = |class: &str| -> BTreeSet<u32> {
        members
            .iter()
            .filter(|(k, _)| k == class)
            .map(|(_, o)| *o)
            .collect()
    };
    for (class, _) in &members {
        if ![
            "pg_proc",
            "pg_type",
            "pg_operator",
            "pg_opclass",
            "pg_opfamily",
            "pg_cast",
            "pg_class",
            "pg_namespace",
        ]
        .contains(&class.as_str())
        {
            problems.push(format!(
                "the extension has a member in {class}, which this test does not know how to \
                 find in docs/reference.md: extend the test and the page"
            ));
        }
    }

    let all_tables = tables(&text);
    let mut documented_procs: BTreeMap<u32, usize> = BTreeMap::new();
    let mut documented_types: BTreeSet<u32> = BTreeSet::new();
    let mut documented_operators: BTreeSet<u32> = BTreeSet::new();
    let mut documented_classes: BTreeSet<u32> = BTreeSet::new();
    let mut documented_families: BTreeSet<u32> = BTreeSet::new();
    let mut documented_casts: BTreeSet<u32> = BTreeSet::new();
    let mut documented_relations: BTreeSet<u32> = BTreeSet::new();
    let mut documented_settings: BTreeSet<String> = BTreeSet::new();
    let mut documented_namespaces: BTreeSet<u32> = BTreeSet::new();
    let mut entries = 0;

    // Tables of these kinds list member objects; the others hold no objects (the version history,
    // server modes, a two-column layout table). Any other kind is refused, so that a table of
    // objects under a new heading cannot go unchecked.
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
    for table in &all_tables {
        let col = |name: &str| table.header.iter().position(|h| h == name);
        let kind = table.header[0].as_str();
        if !OBJECT_KINDS.contains(&kind) && !OTHER_TABLES.contains(&kind) {
            let line = table.rows.first().map_or(0, |r| r.0);
            problems.push(format!(
                "docs/reference.md:{line}: a table of unknown kind {kind:?} (known: {OBJECT_KINDS:?}; \
                 tables without objects: {OTHER_TABLES:?})"
            ));
            continue;
        }
        for (line, row) in &table.rows {
            let at = |i: Option<usize>| i.and_then(|i| row.get(i)).map(String::as_str);
            let here = |msg: String| format!("docs/reference.md:{line}: {msg}");
            if row.len() != table.header.len() {
                problems.push(here(format!(
                    "{} cells, the header has {}",
                    row.len(),
                    table.header.len()
                )));
                continue;
            }
            if row.last().is_some_and(|d| d.is_empty()) {
                problems.push(here("the last column (the description) is empty".into()));
            }
            let Some((entry, rest)) = code_span(&row[0]) else {
                if OBJECT_KINDS.contains(&kind) {
                    problems.push(here(format!(
                        "a row of a {kind} table must name its object in `code`"
                    )));
                }
                continue;
            };
            let since = since_version(rest);
            let missing_here = since.is_some_and(|v| major < v);
            match kind {
                "function" | "aggregate" | "procedure" => {
                    entries += 1;
                    let Some(open) = entry.find('(') else {
                        problems.push(here(format!("{entry:?} is not a signature")));
                        continue;
                    };
                    let name = &entry[..open];
                    let args = match parse_args(entry[open + 1..].strip_suffix(')').unwrap_or("")) {
                        Ok(a) => a,
                        Err(e) => {
                            problems.push(here(e));
                            continue;
                        }
                    };
                    let types: Vec<&str> = args.iter().map(|a| a.ty.as_str()).collect();
                    // Internals are listed with their schema, objectid_internal.
                    let signature = if name.contains('.') {
                        format!("{name}({})", types.join(", "))
                    } else {
                        format!("{schema}.{name}({})", types.join(", "))
                    };
                    let oid: Option<u32> = c
                        .query_one("SELECT to_regprocedure($1)::oid", &[&signature])
                        .map_err(|e| problems.push(here(format!("{signature}: {e}"))))
                        .ok()
                        .and_then(|r| r.get(0));
                    let Some(oid) = oid else {
                        if !missing_here {
                            problems.push(here(format!("no routine {signature}")));
                        }
                        continue;
                    };
                    if missing_here {
                        problems.push(here(format!(
                            "{signature} exists on {major}, but the page says PostgreSQL {}+",
                            since.unwrap()
                        )));
                    }
                    if documented_procs.insert(oid, *line).is_some() {
                        problems.push(here(format!("{signature} is listed twice")));
                    }
                    let p = c
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
                    let prokind: String = p.get(0);
                    let want_kind = match kind {
                        "function" => "f",
                        "aggregate" => "a",
                        _ => "p",
                    };
                    if prokind != want_kind {
                        problems.push(here(format!(
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
                        match at(col(column)) {
                            Some(stated) if stated != actual => problems.push(here(format!(
                                "{signature}: {column} is {actual} in the catalog, the page says {stated}"
                            ))),
                            None if kind != "procedure" => problems.push(here(format!("no {column} column"))),
                            _ => {}
                        }
                    }
                    // Argument names and defaults.
                    let names: Vec<String> = p.get(7);
                    let modes: Vec<String> = p.get(8);
                    let nargs: i32 = p.get(9);
                    let ndefaults: i32 = p.get(10);
                    let in_names: Vec<String> = names
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| {
                            modes.is_empty() || matches!(modes[*i].as_str(), "i" | "b" | "v")
                        })
                        .map(|(_, n)| n.clone())
                        .collect();
                    for (i, a) in args.iter().enumerate() {
                        let catalog_name = in_names.get(i).filter(|n| !n.is_empty());
                        if a.name.as_ref() != catalog_name {
                            problems.push(here(format!(
                                "{signature}: argument {} is named {catalog_name:?} in the catalog, the page says {:?}",
                                i + 1,
                                a.name
                            )));
                        }
                        let has_default = (i as i32) >= nargs - ndefaults;
                        match (&a.default, has_default) {
                            (Some(_), false) => problems.push(here(format!(
                                "{signature}: argument {} has no default",
                                i + 1
                            ))),
                            (None, true) => problems.push(here(format!(
                                "{signature}: argument {} has a default the page does not give",
                                i + 1
                            ))),
                            (Some(doc), true) => {
                                let catalog: String = c
                                    .query_one(
                                        "SELECT pg_get_function_arg_default($1, $2)",
                                        &[&oid, &(i as i32 + 1)],
                                    )
                                    .unwrap()
                                    .get(0);
                                let ty = one_string(&mut c, &format!("SELECT format_type(proargtypes[{i}], NULL) FROM pg_proc WHERE oid = {oid}"));
                                let same = c
                                    .query_one(&format!("SELECT ({doc})::{ty} IS NOT DISTINCT FROM ({catalog})::{ty}"), &[])
                                    .map(|r| r.get::<_, bool>(0));
                                if !matches!(same, Ok(true)) {
                                    problems.push(here(format!(
                                        "{signature}: argument {} defaults to {catalog}, the page says {doc} ({same:?})",
                                        i + 1
                                    )));
                                }
                            }
                            (None, false) => {}
                        }
                    }
                    // The result.
                    if kind == "procedure" {
                        continue;
                    }
                    let Some(returns) = at(col("returns")) else {
                        problems.push(here("no returns column".into()));
                        continue;
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
                                    cols.iter().map(|a| type_oid(&mut c, &a.ty)).collect();
                                if !retset
                                    || doc_names != out_names
                                    || doc_types.as_ref().ok() != Some(&out_types)
                                {
                                    let actual = one_string(
                                        &mut c,
                                        &format!("SELECT pg_get_function_result({oid})"),
                                    );
                                    problems.push(here(format!(
                                        "{signature} returns {actual}, the page says {returns}"
                                    )));
                                }
                            }
                            Err(e) => problems.push(here(e)),
                        }
                    } else {
                        let (set, ty) = match returns.strip_prefix("SETOF ") {
                            Some(t) => (true, t),
                            None => (false, returns),
                        };
                        if set != retset
                            || !out_names.is_empty()
                            || type_oid(&mut c, ty).ok() != Some(rettype)
                        {
                            let actual = one_string(
                                &mut c,
                                &format!("SELECT pg_get_function_result({oid})"),
                            );
                            problems.push(here(format!(
                                "{signature} returns {actual}, the page says {returns}"
                            )));
                        }
                    }
                }
                "operator" => {
                    entries += 1;
                    let words: Vec<&str> = entry.split_whitespace().collect();
                    let [left, op, right] = words.as_slice() else {
                        problems.push(here(format!("{entry:?}: write `left OP right`")));
                        continue;
                    };
                    let row_got = c.query_opt(
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
                        problems.push(here(format!("no operator {entry}")));
                        continue;
                    };
                    if !documented_operators.insert(o.get(0)) {
                        problems.push(here(format!("{entry}: listed twice")));
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
                        match at(col(column)).map(plain) {
                            Some(stated) if stated == actual => {}
                            stated => problems.push(here(format!("{entry}: {column} is {actual:?} in the catalog, the page says {stated:?}"))),
                        }
                    }
                }
                "operator class" => {
                    entries += 1;
                    let method = at(col("access method")).map(plain).unwrap_or("");
                    let row_got = c.query_opt(
                        "SELECT c.oid, f.oid, f.opfname::text, c.opcdefault FROM pg_opclass c \
                         JOIN pg_am a ON a.oid = c.opcmethod JOIN pg_opfamily f ON f.oid = c.opcfamily \
                         WHERE c.opcname = $1 AND a.amname = $2 AND c.opcnamespace = $3::text::regnamespace",
                        &[&entry, &method, &schema],
                    ).unwrap();
                    let Some(o) = row_got else {
                        if !missing_here {
                            problems.push(here(format!("no operator class {entry} for {method}")));
                        }
                        continue;
                    };
                    if missing_here {
                        problems.push(here(format!(
                            "{entry} exists on {major}, but the page says PostgreSQL {}+",
                            since.unwrap()
                        )));
                    }
                    if !documented_classes.insert(o.get(0)) {
                        problems.push(here(format!("{entry}: listed twice")));
                    }
                    documented_families.insert(o.get(1));
                    for (column, actual) in [
                        ("family", o.get::<_, String>(2)),
                        ("default", yes_no(o.get(3)).to_string()),
                    ] {
                        match at(col(column)).map(plain) {
                            Some(stated) if stated == actual => {}
                            stated => problems.push(here(format!("{entry} ({method}): {column} is {actual:?} in the catalog, the page says {stated:?}"))),
                        }
                    }
                }
                "cast" => {
                    entries += 1;
                    let Some((source, target)) = entry.split_once(" AS ") else {
                        problems.push(here(format!("{entry:?}: write `source AS target`")));
                        continue;
                    };
                    let function = at(col("function")).map(plain).unwrap_or("");
                    let row_got = c
                        .query_opt(
                            "SELECT oid, castfunc, castcontext::text FROM pg_cast \
                         WHERE castsource = to_regtype($1) AND casttarget = to_regtype($2)",
                            &[&source.trim(), &target.trim()],
                        )
                        .unwrap();
                    let Some(o) = row_got else {
                        problems.push(here(format!("no cast {entry}")));
                        continue;
                    };
                    if !documented_casts.insert(o.get(0)) {
                        problems.push(here(format!("{entry}: listed twice")));
                    }
                    let func: Option<u32> = c
                        .query_one(
                            "SELECT to_regprocedure($1)::oid",
                            &[&format!("{schema}.{function}")],
                        )
                        .unwrap()
                        .get(0);
                    if func != Some(o.get::<_, u32>(1)) {
                        problems.push(here(format!(
                            "{entry}: the cast's function is not {function}"
                        )));
                    }
                    let context = match o.get::<_, String>(2).as_str() {
                        "e" => "explicit",
                        "a" => "assignment",
                        _ => "implicit",
                    };
                    if at(col("context")).map(plain) != Some(context) {
                        problems.push(here(format!(
                            "{entry}: context is {context} in the catalog"
                        )));
                    }
                }
                "type" if col("length").is_some() => {
                    entries += 1;
                    let row_got = c.query_opt(
                        "SELECT oid, typlen::text, typalign::text, typstorage::text, typcategory::text, \
                                typinput::regproc::text, typoutput::regproc::text, typreceive::regproc::text, typsend::regproc::text \
                         FROM pg_type WHERE typname = $1 AND typnamespace = $2::text::regnamespace",
                        &[&entry, &schema],
                    ).unwrap();
                    let Some(o) = row_got else {
                        problems.push(here(format!("no type {entry}")));
                        continue;
                    };
                    if !documented_types.insert(o.get(0)) {
                        problems.push(here(format!("{entry}: listed twice")));
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
                        match at(col(column)).map(plain) {
                            Some(stated) if stated == actual => {}
                            stated => problems.push(here(format!("type {entry}: {column} is {actual:?} in the catalog, the page says {stated:?}"))),
                        }
                    }
                }
                "relation" => {
                    entries += 1;
                    let (relation_schema, relation) = match entry.split_once('.') {
                        Some((s, r)) => (s.to_string(), r),
                        None => (schema.clone(), entry),
                    };
                    let row_got = c.query_opt(
                        "SELECT c.oid, c.relkind::text, \
                                (SELECT array_agg(a.attname::text ORDER BY a.attnum) FROM pg_attribute a \
                                  WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) \
                         FROM pg_class c WHERE c.relname = $1 AND c.relnamespace = $2::text::regnamespace",
                        &[&relation, &relation_schema],
                    ).unwrap();
                    let Some(o) = row_got else {
                        problems.push(here(format!("no relation {entry}")));
                        continue;
                    };
                    if !documented_relations.insert(o.get(0)) {
                        problems.push(here(format!("{entry}: listed twice")));
                    }
                    let relkind = match o.get::<_, String>(1).as_str() {
                        "r" => "table",
                        "v" => "view",
                        "c" => "composite type",
                        other => other,
                    }
                    .to_string();
                    if at(col("kind")).map(plain) != Some(relkind.as_str()) {
                        problems.push(here(format!("{entry} is a {relkind}")));
                    }
                    let columns: Vec<String> = o.get(2);
                    let stated: Vec<&str> = at(col("columns"))
                        .unwrap_or("")
                        .split(',')
                        .map(plain)
                        .collect();
                    if stated != columns {
                        problems.push(here(format!(
                            "{entry} has the columns {}",
                            columns.join(", ")
                        )));
                    }
                }
                "schema" => {
                    entries += 1;
                    let oid: Option<u32> = c
                        .query_one("SELECT to_regnamespace($1)::oid", &[&entry])
                        .unwrap()
                        .get(0);
                    match oid {
                        Some(oid) if members_of("pg_namespace").contains(&oid) => {
                            documented_namespaces.insert(oid);
                            let owner = one_string(
                                &mut c,
                                &format!("SELECT nspowner::regrole::text FROM pg_namespace WHERE oid = {oid}"),
                            );
                            let stated = at(col("owner")).map(plain);
                            // The installing superuser, or the bootstrap superuser for a trusted install.
                            if stated != Some("the installing superuser")
                                || !one_bool(
                                    &mut c,
                                    &format!(
                                        "SELECT rolsuper FROM pg_roles WHERE rolname = '{owner}'"
                                    ),
                                )
                            {
                                problems.push(here(format!(
                                    "schema {entry} is owned by {owner}, the page says {stated:?}"
                                )));
                            }
                        }
                        _ => problems.push(here(format!("no schema {entry} of the extension"))),
                    }
                }
                "setting" => {
                    entries += 1;
                    if !documented_settings.insert(entry.to_string()) {
                        problems.push(here(format!("{entry}: listed twice")));
                    }
                    // A custom setting exists once the library is loaded.
                    c.batch_execute("LOAD 'pg_objectid'").unwrap();
                    let row_got = c
                        .query_opt(
                            "SELECT vartype, boot_val, context FROM pg_settings WHERE name = $1",
                            &[&entry],
                        )
                        .unwrap();
                    let Some(o) = row_got else {
                        problems.push(here(format!("no setting {entry}")));
                        continue;
                    };
                    for (column, actual) in [
                        ("type", o.get::<_, String>(0)),
                        ("default", o.get(1)),
                        ("context", o.get(2)),
                    ] {
                        match at(col(column)).map(plain) {
                            Some(stated) if stated == actual => {}
                            stated => problems.push(here(format!("{entry}: {column} is {actual:?} in the catalog, the page says {stated:?}"))),
                        }
                    }
                }
                _ => {}
            }
        }
    }

    // Every member is documented.
    let describe = |c: &mut postgres::Client, class: &str, oid: u32| -> String {
        one_string(
            c,
            &format!("SELECT pg_describe_object('{class}'::regclass, {oid}, 0)"),
        )
    };
    for oid in members_of("pg_proc") {
        if !documented_procs.contains_key(&oid) {
            let row = c
                .query_one(
                    "SELECT oid::regprocedure::text, pg_get_function_result(oid), provolatile::text, \
                            proisstrict, proparallel::text, proleakproof FROM pg_proc WHERE oid = $1",
                    &[&oid],
                )
                .unwrap();
            problems.push(format!(
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
    let covered: [(&str, &BTreeSet<u32>); 6] = [
        ("pg_namespace", &documented_namespaces),
        ("pg_operator", &documented_operators),
        ("pg_opclass", &documented_classes),
        ("pg_opfamily", &documented_families),
        ("pg_cast", &documented_casts),
        ("pg_class", &documented_relations),
    ];
    for (class, documented) in covered {
        for oid in members_of(class) {
            if !documented.contains(&oid) {
                let what = describe(&mut c, class, oid);
                problems.push(format!("docs/reference.md does not list the {what}"));
            }
        }
    }
    // Types: base types are listed; array types and the row types of listed relations come with
    // what they belong to.
    for oid in members_of("pg_type") {
        let (elem, relid): (u32, u32) = {
            let r = c
                .query_one(
                    "SELECT CASE WHEN t.typcategory = 'A' THEN t.typelem ELSE 0::oid END, t.typrelid \
                     FROM pg_type t WHERE t.oid = $1",
                    &[&oid],
                )
                .unwrap();
            (r.get(0), r.get(1))
        };
        let elem_relid: u32 = if elem != 0 {
            c.query_one("SELECT typrelid FROM pg_type WHERE oid = $1", &[&elem])
                .unwrap()
                .get(0)
        } else {
            0
        };
        let ok = documented_types.contains(&oid)
            || documented_relations.contains(&relid)
            || documented_types.contains(&elem)
            || documented_relations.contains(&elem_relid);
        if !ok {
            let what = describe(&mut c, "pg_type", oid);
            problems.push(format!("docs/reference.md does not list the {what}"));
        }
    }
    // Settings.
    c.batch_execute("LOAD 'pg_objectid'").unwrap();
    let settings: BTreeSet<String> = c
        .query(
            "SELECT name FROM pg_settings WHERE name LIKE 'pg_objectid.%'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    for s in settings.difference(&documented_settings) {
        problems.push(format!("docs/reference.md does not list the setting {s}"));
    }
    // The page says so; a SECURITY DEFINER function would need its own column and a reason.
    let definers: Vec<String> = c
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
        problems.push(format!(
            "docs/reference.md says no function is SECURITY DEFINER, but these are: {definers:?}"
        ));
    }
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

// ------------------------------------------------------------------------------------------------
// Links

/// GitHub's anchor for a heading: lowercase, spaces to hyphens, punctuation other than `-` and
/// `_` dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings, with GitHub's `-1`, `-2` … for repeated ones.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = BTreeSet::new();
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code || !line.starts_with('#') {
            continue;
        }
        let heading = line.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        // Links in headings count by their text.
        let mut text = String::new();
        let mut rest = heading;
        while let Some(open) = rest.find('[') {
            text.push_str(&rest[..open]);
            rest = &rest[open + 1..];
            if let Some(close) = rest.find("](") {
                text.push_str(&rest[..close]);
                rest = &rest[close..];
                rest = rest.find(')').map(|p| &rest[p + 1..]).unwrap_or("");
            }
        }
        text.push_str(rest);
        let base = slug(&text);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// The targets of `[text](target)` links and images outside code, with their lines.
fn links(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut in_code = false;
    for (n, line) in text.lines().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        // Inline code spans hold examples, not links.
        let prose: String = line
            .split('`')
            .enumerate()
            .map(|(i, part)| if i % 2 == 0 { part } else { "" })
            .collect();
        let mut rest = prose.as_str();
        while let Some(at) = rest.find("](") {
            rest = &rest[at + 2..];
            if let Some(end) = rest.find(')') {
                out.push((n + 1, rest[..end].trim().to_string()));
                rest = &rest[end..];
            }
        }
    }
    out
}

#[test]
fn every_link_in_the_docs_resolves() {
    let pages = pages();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (page, text) in &pages {
        let dir = Path::new(page).parent().unwrap_or(Path::new(""));
        for (line, target) in links(text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, anchor) = match target.split_once('#') {
                Some((p, a)) => (p, Some(a)),
                None => (target.as_str(), None),
            };
            let file = if path.is_empty() {
                PathBuf::from(page)
            } else {
                dir.join(path)
            };
            let full = Path::new(ROOT).join(&file);
            if !full.exists() {
                problems.push(format!(
                    "{page}:{line}: {target}: no file {}",
                    file.display()
                ));
                continue;
            }
            if let Some(anchor) = anchor {
                if file.extension().is_some_and(|e| e == "md") {
                    let target_text = std::fs::read_to_string(&full).unwrap();
                    if !anchors(&target_text).contains(anchor) {
                        problems.push(format!(
                            "{page}:{line}: {target}: no heading with the anchor #{anchor} in {}",
                            file.display()
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 20, "only {checked} links found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn slugs_are_githubs() {
    assert_eq!(slug("gen_objectid()"), "gen_objectid");
    assert_eq!(slug("4. Rekey"), "4-rekey");
    assert_eq!(slug("How it works, and why"), "how-it-works-and-why");
    assert_eq!(
        slug("Writes from several nodes: choosing the generator"),
        "writes-from-several-nodes-choosing-the-generator"
    );
    let page = "# A\n## B b\n```\n# not a heading\n```\n## B b\n";
    assert_eq!(
        anchors(page),
        ["a", "b-b", "b-b-1"]
            .into_iter()
            .map(String::from)
            .collect()
    );
}
