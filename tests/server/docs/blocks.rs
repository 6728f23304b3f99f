//! The code blocks of a page, their `docs-test` annotations and `-- →` results, and the plan of
//! a page's run on a given server.

use std::collections::BTreeSet;

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
    pub(super) fn parse(text: &str) -> Result<Directive, String> {
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
pub(super) struct Fence {
    pub(super) line: usize,
    info: String,
    pub(super) body: Vec<String>,
    directives: Vec<Directive>,
}

impl Fence {
    pub(super) fn is_sql(&self) -> bool {
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
pub(super) fn fences(text: &str) -> Result<Vec<Fence>, Vec<String>> {
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
pub(super) fn split_comment(line: &str) -> (&str, Option<&str>) {
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
pub(super) struct Check {
    /// Index in the block's body of the line whose final `;` ends the statement.
    pub(super) target: usize,
    pub(super) expected: Vec<String>,
    /// `→` comment (unaligned, ` | ` between columns, `; ` between rows) or an output block.
    pub(super) kind: CheckKind,
    pub(super) doc_line: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) enum CheckKind {
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
pub(super) struct Server {
    pub(super) major: u32,
    pub(super) extensions: BTreeSet<String>,
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
pub(super) struct Runnable {
    pub(super) fence: Fence,
    pub(super) expect_error: Option<String>,
    pub(super) checks: Vec<Check>,
}

/// The plan for one page: the blocks to run, in order, and what is skipped (doc line, reason).
pub(super) struct PagePlan {
    pub(super) blocks: Vec<Runnable>,
    pub(super) skipped: Vec<(usize, String)>,
    pub(super) creates_extension: bool,
}

pub(super) fn plan_page(text: &str, server: &Server) -> Result<PagePlan, Vec<String>> {
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
