//! Running a page's SQL blocks through psql, and what the run found.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::blocks::{plan_page, split_comment, CheckKind, PagePlan, Server};
use crate::common::*;

/// The psql to run pages with: PG_OBJECTID_TEST_PSQL, else the one beside the server's own
/// programs (so the client is the server's version, as a reader's would be), else psql on PATH.
pub(super) fn psql_program(client: &mut postgres::Client) -> PathBuf {
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

pub(super) fn server_info(client: &mut postgres::Client) -> Server {
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
pub(super) struct PageReport {
    pub(super) failures: Vec<String>,
    pub(super) skipped: Vec<(usize, String)>,
    pub(super) blocks_run: usize,
    pub(super) results_checked: usize,
}

/// Runs the SQL blocks of `text` (the page `page`) through `psql` in database `dbname`, made anew
/// (a name from `database_name`, taken in the test's own thread).
pub(super) fn run_page(
    page: &str,
    text: &str,
    psql: &Path,
    server: &Server,
    dbname: &str,
) -> PageReport {
    let mut report = PageReport::default();
    let mut plan = match plan_page(text, server) {
        Ok(plan) => plan,
        Err(errors) => {
            report
                .failures
                .extend(errors.into_iter().map(|e| format!("{page}: {e}")));
            return report;
        }
    };
    report.skipped = std::mem::take(&mut plan.skipped);
    if plan.blocks.is_empty() {
        return report;
    }
    let mut client = create_database(dbname, "");
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
    let script = PageScript::new(&plan, &work);
    std::fs::write(&script_path, script.lines.join("\n") + "\n").unwrap();

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

    let errors = psql_errors(&stderr, &script_path);
    check_errors(page, &plan, &script, &errors, &stdout, &mut report);
    if !stdout.contains("docs-test: end of page") && report.failures.is_empty() {
        report.failures.push(format!(
            "{page}: psql stopped before the end of the page (exit {:?}): {stderr}",
            output.status.code()
        ));
    }
    check_results(page, &plan, script.outputs, &mut report);
    // The failures say what went wrong and where; the script and result files are not kept.
    let _ = std::fs::remove_dir_all(&work);
    report
}

/// The psql script of a page, and for each of its lines the page line it came from.
struct PageScript {
    lines: Vec<String>,
    origin: Vec<usize>,
    /// (first script line, last script line, block index) of each block.
    ranges: Vec<(usize, usize, usize)>,
    /// (file, block, check): where psql writes each result the page states.
    outputs: Vec<(PathBuf, usize, usize)>,
}

impl PageScript {
    fn emit(&mut self, line: String, from: usize) {
        self.lines.push(line);
        self.origin.push(from);
    }

    /// The script for `plan`, writing the results it checks into `work`.
    fn new(plan: &PagePlan, work: &Path) -> PageScript {
        let mut script = PageScript {
            lines: Vec::new(),
            origin: Vec::new(),
            ranges: Vec::new(),
            outputs: Vec::new(),
        };
        // Verbose errors carry the SQLSTATE; the context lines of PL/pgSQL errors are noise here.
        script.emit("\\set VERBOSITY verbose".into(), 0);
        script.emit("\\set SHOW_CONTEXT never".into(), 0);
        for (b, block) in plan.blocks.iter().enumerate() {
            if block.expect_error.is_some() {
                script.emit("\\set ON_ERROR_STOP 0".into(), block.fence.line);
            }
            let first = script.lines.len() + 1;
            for (k, line) in block.fence.body.iter().enumerate() {
                let doc_line = block.fence.line + 1 + k;
                match block.checks.iter().position(|c| c.target == k) {
                    Some(c) => {
                        // `\g` instead of the final `;` sends the statement and writes its result
                        // to a file, formatted for comparing whatever the page set with \pset.
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
                        script.emit(
                            format!("{code} \\g ({options}) {}", file.display()),
                            doc_line,
                        );
                        script.outputs.push((file, b, c));
                    }
                    None => script.emit(line.clone(), doc_line),
                }
            }
            script.ranges.push((first, script.lines.len(), b));
            if block.expect_error.is_some() {
                script.emit("\\set ON_ERROR_STOP 1".into(), block.fence.line);
            }
        }
        // Reaching this line shows that psql ran the whole page.
        script.emit("\\echo docs-test: end of page".into(), 0);
        script
    }

    /// The block that script line `n` belongs to, if any.
    fn block_of(&self, n: usize) -> Option<usize> {
        self.ranges
            .iter()
            .find(|(f, l, _)| (*f..=*l).contains(&n))
            .map(|r| r.2)
    }

    /// The page line that script line `n` came from (0 for lines of the runner's own).
    fn doc_line_of(&self, n: usize) -> usize {
        self.origin.get(n.wrapping_sub(1)).copied().unwrap_or(0)
    }
}

/// An error psql reported: the script line, the SQLSTATE if the server gave one, the message.
type PsqlError = (usize, Option<String>, String);

/// psql reports each error as `psql:FILE:LINE: ERROR:  SQLSTATE: message` (verbose), or
/// `psql:FILE:LINE: error: …` for its own.
fn psql_errors(stderr: &str, script_path: &Path) -> Vec<PsqlError> {
    let prefix = format!("psql:{}:", script_path.display());
    let mut errors: Vec<PsqlError> = Vec::new();
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
    errors
}

/// Each block failed as its annotation says, or not at all; errors outside blocks are failures.
fn check_errors(
    page: &str,
    plan: &PagePlan,
    script: &PageScript,
    errors: &[PsqlError],
    stdout: &str,
    report: &mut PageReport,
) {
    for (b, block) in plan.blocks.iter().enumerate() {
        report.blocks_run += 1;
        let mine: Vec<&PsqlError> = errors
            .iter()
            .filter(|e| script.block_of(e.0) == Some(b))
            .collect();
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
                            script.doc_line_of(*n),
                            code.as_deref().unwrap_or("no SQLSTATE")
                        ));
                    }
                }
            }
            None => {
                for (n, _, message) in mine {
                    report
                        .failures
                        .push(format!("{page}:{}: {message}", script.doc_line_of(*n)));
                }
            }
        }
    }
    for (n, _, message) in errors.iter().filter(|e| script.block_of(e.0).is_none()) {
        report
            .failures
            .push(format!("{page}:{}: {message}", script.doc_line_of(*n)));
    }
}

/// Trailing spaces and trailing empty lines do not count.
fn trimmed(lines: &mut Vec<String>) {
    for l in lines.iter_mut() {
        *l = l.trim_end().to_string();
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
}

/// Each result the page states is the one psql wrote.
fn check_results(
    page: &str,
    plan: &PagePlan,
    outputs: Vec<(PathBuf, usize, usize)>,
    report: &mut PageReport,
) {
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
}
