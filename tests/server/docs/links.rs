//! Links in README.md and docs/*.md: relative links and their #anchors point at files and
//! headings that exist.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use super::{pages, ROOT};

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
