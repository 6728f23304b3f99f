//! The runner on pages written here: each must fail where the docs would be wrong, since a test
//! that could not fail would let the docs drift unnoticed.

use std::collections::BTreeSet;

use super::blocks::{plan_page, Server};
use super::runner::{psql_program, run_page, server_info, PageReport};
use crate::common::*;

/// Runs the page `text`, called `name`, in a database of the running test's.
fn self_test_page(name: &str, text: &str) -> PageReport {
    let mut admin = connect_to("postgres");
    let psql = psql_program(&mut admin);
    let server = server_info(&mut admin);
    run_page(name, text, &psql, &server, &database_name(name))
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
