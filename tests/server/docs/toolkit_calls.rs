//! Every call of the rekey toolkit that the docs show (in ```sql blocks) is one a superuser may copy
//! into a database whose owner it does not trust (issue 36): schema-qualified, and with every
//! literal argument cast to its declared type, so that no overload planted for untyped literals
//! can take it (docs/migration.md, "Call the documented functions as you would …").

use super::blocks::fences;
use super::pages;

const ROUTINES: &[&str] = &[
    "rekey_assess_schema",
    "rekey_assess",
    "rekey_references",
    "rekey_plan",
    "rekey_switch_default",
    "rekey_run",
    "rekey_translate",
    "rekey_verify",
    "rekey_forget",
];

/// What is wrong with the call of `routine` whose name starts at `at` in `line`, if anything.
fn problem(line: &str, at: usize, routine: &str) -> Option<String> {
    let before = &line[..at];
    if !(before.ends_with("public.") || before.ends_with("objectid_internal.")) {
        return Some(format!("{routine} is not schema-qualified"));
    }
    if before.ends_with("objectid_internal.") {
        // The internal functions: no other role can create in their schema.
        return None;
    }
    let args = &line[at + routine.len() + 1..];
    let mut depth = 1;
    let mut chars = args.char_indices().peekable();
    while let Some((i, ch)) = chars.next() {
        match ch {
            '\'' => {
                // To the closing quote ('' inside a literal is a quote), then its cast.
                let mut end = None;
                while let Some((j, c)) = chars.next() {
                    if c == '\'' {
                        if chars.peek().map(|&(_, c)| c) == Some('\'') {
                            chars.next();
                        } else {
                            end = Some(j);
                            break;
                        }
                    }
                }
                let end = end?;
                if !args[end + 1..].starts_with("::") {
                    return Some(format!(
                        "the literal {} is not cast to its type",
                        &args[i..=end]
                    ));
                }
            }
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return None;
                }
            }
            _ => {}
        }
    }
    None
}

#[test]
fn every_toolkit_call_in_the_docs_is_qualified_and_cast() {
    let mut problems = Vec::new();
    let mut calls = 0;
    for (page, text) in pages() {
        let Ok(fences) = fences(&text) else { continue };
        for fence in fences.iter().filter(|f| f.is_sql()) {
            for (n, line) in fence.body.iter().enumerate() {
                let code = line.split("--").next().unwrap_or("");
                for routine in ROUTINES {
                    let call = format!("{routine}(");
                    let mut from = 0;
                    while let Some(found) = code[from..].find(&call) {
                        let at = from + found;
                        from = at + call.len();
                        // rekey_assess( is also the tail of rekey_assess_schema(: not here.
                        if code[..at].ends_with(|c: char| c.is_alphanumeric() || c == '_') {
                            continue;
                        }
                        calls += 1;
                        if let Some(p) = problem(code, at, routine) {
                            problems.push(format!(
                                "{page}:{}: {p}: {}",
                                fence.line + 1 + n,
                                line.trim()
                            ));
                        }
                    }
                }
                if code.contains("rekey_status")
                    && !code.contains("public.rekey_status")
                    && !code.contains("rekey_status_rows")
                {
                    problems.push(format!(
                        "{page}:{}: rekey_status is not schema-qualified: {}",
                        fence.line + 1 + n,
                        line.trim()
                    ));
                }
            }
        }
    }
    assert!(calls > 20, "only {calls} toolkit calls found in the docs");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
