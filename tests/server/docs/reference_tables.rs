//! Reading docs/reference.md: its Markdown tables, the cells of their rows, and the signatures
//! and arguments written in them.

/// A Markdown table: its header cells (lowercased) and rows, each with its page line.
pub(super) struct Table {
    pub(super) header: Vec<String>,
    pub(super) rows: Vec<(usize, Vec<String>)>,
}

/// Cells of a table row; `|` inside backticks does not split.
pub(super) fn cells(line: &str) -> Vec<String> {
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

pub(super) fn tables(text: &str) -> Vec<Table> {
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
pub(super) fn code_span(cell: &str) -> Option<(&str, &str)> {
    let start = cell.find('`')? + 1;
    let len = cell[start..].find('`')?;
    Some((&cell[start..start + len], &cell[start + len + 1..]))
}

/// The cell without backticks around it.
pub(super) fn plain(cell: &str) -> &str {
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
pub(super) fn since_version(rest: &str) -> Option<u32> {
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
pub(super) struct Arg {
    pub(super) name: Option<String>,
    pub(super) ty: String,
    pub(super) default: Option<String>,
}

pub(super) fn parse_args(list: &str) -> Result<Vec<Arg>, String> {
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
