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
//! - `every_toolkit_call_in_the_docs_is_qualified_and_cast`: the rekey toolkit's calls in the
//!   examples are the ones a superuser may copy where another role planted overloads.
//! - `the_runner_*`: the runner itself, on pages written here, fails where it must: a test that
//!   could not fail would let the docs drift unnoticed.
//!
//! One file per concern: `blocks` reads a page's code blocks and annotations into the plan of its
//! run, `runner` runs that plan through psql, `examples` runs every page, `runner_checks` makes
//! the runner fail on pages written for it, `reference_tables` reads docs/reference.md's tables,
//! `reference` holds them against the catalogs, `links` follows every link, and `toolkit_calls`
//! reads the toolkit's calls.

use std::path::Path;

mod blocks;
mod examples;
mod links;
mod reference;
mod reference_tables;
mod runner;
mod runner_checks;
mod toolkit_calls;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

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
