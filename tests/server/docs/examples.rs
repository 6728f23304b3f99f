//! Every SQL example of README.md and docs/*.md runs on this server, with its stated results.

use std::io::Write;

use super::blocks::fences;
use super::pages;
use super::runner::{psql_program, run_page, server_info, PageReport};
use crate::common::*;

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
    // connections from the tests running meanwhile. The names come from this thread, the
    // test's, before the workers start.
    let databases: Vec<String> = pages.iter().map(|(page, _)| database_name(page)).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut reports: Vec<(usize, String, PageReport)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let (psql, server, pages, databases, next) =
                    (&psql, &server, &pages, &databases, &next);
                s.spawn(move || {
                    let mut done = Vec::new();
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((page, text)) = pages.get(i) else {
                            return done;
                        };
                        let report = run_page(page, text, psql, server, &databases[i]);
                        done.push((i, page.clone(), report));
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
