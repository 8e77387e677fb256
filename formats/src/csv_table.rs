//! A CSV file of numeric feature columns and one label column, as labelling tools and
//! spreadsheets export them.
//!
//! The first row is the header. Every column but the label column is a feature and every
//! feature cell must be a finite number: a blank, a word or a NaN is an error naming the
//! row and column, because guessing a value for it would quietly change the data being
//! audited. Labels may be numbers or strings; classes are the distinct labels, in numeric
//! order when every label is a number and in text order otherwise. A sample's id is its
//! 0-based data row (the header not counted). Parsed with the `csv` crate, which also
//! rejects ragged rows.

use std::path::Path;

use crate::{FormatError, Result};

/// A parsed table.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The feature columns' names, in file order.
    pub features: Vec<String>,
    /// `rows * features.len()` values, row-major.
    pub values: Vec<f32>,
    /// Class names, ordered as described in the module docs.
    pub classes: Vec<String>,
    /// Per row, the index into `classes`.
    pub labels: Vec<u32>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.labels.len()
    }
}

/// Read `path`, with the labels in column `label_column`.
pub fn read(path: &Path, label_column: &str) -> Result<Table> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    parse(&bytes, label_column, path)
}

/// Read a table whose label column, if present, is ignored (inputs to predict).
/// `features` names the columns to read, in the order the model takes them.
pub fn read_features(path: &Path, features: &[String]) -> Result<Vec<f32>> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    let mut reader = reader(&bytes);
    let header = header(&mut reader, path)?;
    let positions = features
        .iter()
        .map(|name| {
            header.iter().position(|h| h == name).ok_or_else(|| {
                FormatError::malformed(path, format!("has no column '{name}' the model needs"))
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut values = Vec::new();
    for (row, record) in reader.records().enumerate() {
        let record = record.map_err(|e| csv_error(path, e))?;
        for (&at, name) in positions.iter().zip(features) {
            values.push(number(&record[at], row, name, path)?);
        }
    }
    Ok(values)
}

/// Parse CSV bytes (the file is `path`, for messages).
pub fn parse(bytes: &[u8], label_column: &str, path: &Path) -> Result<Table> {
    let mut reader = reader(bytes);
    let header = header(&mut reader, path)?;
    let label_at = header.iter().position(|h| h == label_column).ok_or_else(|| {
        FormatError::malformed(
            path,
            format!(
                "has no label column '{label_column}' (columns: {}; choose one with --label-column)",
                preview(&header)
            ),
        )
    })?;
    let features: Vec<String> = header
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != label_at)
        .map(|(_, h)| h.to_string())
        .collect();
    if features.is_empty() {
        return Err(FormatError::malformed(
            path,
            "has no feature columns beside the labels",
        ));
    }
    let mut values = Vec::new();
    let mut raw_labels = Vec::new();
    for (row, record) in reader.records().enumerate() {
        let record = record.map_err(|e| csv_error(path, e))?;
        for (i, cell) in record.iter().enumerate() {
            if i == label_at {
                let label = cell.trim();
                if label.is_empty() {
                    return Err(FormatError::malformed(
                        path,
                        format!("row {row}: empty label"),
                    ));
                }
                raw_labels.push(label.to_string());
            } else {
                values.push(number(cell, row, &header[i], path)?);
            }
        }
    }
    if raw_labels.is_empty() {
        return Err(FormatError::malformed(
            path,
            "has a header but no data rows",
        ));
    }
    let (classes, labels) = crate::labels::classes_of(&raw_labels);
    Ok(Table {
        features,
        values,
        classes,
        labels,
    })
}

fn reader(bytes: &[u8]) -> csv::Reader<&[u8]> {
    csv::ReaderBuilder::new()
        .has_headers(true)
        .trim(csv::Trim::All)
        .from_reader(bytes)
}

fn header(reader: &mut csv::Reader<&[u8]>, path: &Path) -> Result<Vec<String>> {
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| csv_error(path, e))?
        .iter()
        .map(str::to_string)
        .collect();
    if header.iter().all(String::is_empty) {
        return Err(FormatError::malformed(path, "is empty (no header row)"));
    }
    // A repeated name would make "the column called x" ambiguous for predict.
    for (i, name) in header.iter().enumerate() {
        if header[..i].contains(name) {
            return Err(FormatError::malformed(
                path,
                format!("has two columns named '{name}'"),
            ));
        }
    }
    Ok(header)
}

fn number(cell: &str, row: usize, column: &str, path: &Path) -> Result<f32> {
    match cell.trim().parse::<f32>() {
        Ok(v) if v.is_finite() => Ok(v),
        _ => Err(FormatError::malformed(
            path,
            format!("row {row}, column '{column}': '{cell}' is not a finite number"),
        )),
    }
}

fn csv_error(path: &Path, e: csv::Error) -> FormatError {
    let reason = match e.kind() {
        csv::ErrorKind::UnequalLengths {
            pos,
            expected_len,
            len,
        } => format!(
            "line {}: {len} fields where the header has {expected_len}",
            pos.as_ref().map_or(0, |p| p.line())
        ),
        csv::ErrorKind::Utf8 { pos, .. } => format!(
            "line {}: not valid UTF-8",
            pos.as_ref().map_or(0, |p| p.line())
        ),
        _ => e.to_string(),
    };
    FormatError::malformed(path, reason)
}

fn preview(header: &[String]) -> String {
    let shown: Vec<&str> = header.iter().take(6).map(String::as_str).collect();
    match header.len() > 6 {
        true => format!("{}, ... {} in all", shown.join(", "), header.len()),
        false => shown.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Table> {
        parse(text.as_bytes(), "label", Path::new("t.csv"))
    }

    #[test]
    fn numbers_and_string_labels() {
        let t = parsed("a,label,b\n1,cat,2\n3.5,dog,-4\n5,cat,6e1\n").unwrap();
        assert_eq!(t.features, ["a", "b"]);
        assert_eq!(t.values, [1.0, 2.0, 3.5, -4.0, 5.0, 60.0]);
        assert_eq!(t.classes, ["cat", "dog"]);
        assert_eq!(t.labels, [0, 1, 0]);
        // Numeric labels sort as numbers, not as text.
        let t = parsed("x,label\n0,10\n1,9\n2,2\n").unwrap();
        assert_eq!(t.classes, ["2", "9", "10"]);
        assert_eq!(t.labels, [2, 1, 0]);
    }

    #[test]
    fn bad_tables_name_the_fault() {
        let err = |text: &str| parsed(text).unwrap_err().to_string();
        assert!(err("a,b\n1,2\n").contains("no label column 'label'"));
        assert!(err("a,label\n1,x\n2\n").contains("1 fields where the header has 2"));
        assert!(err("a,label\n1,x\nfoo,y\n").contains("row 1, column 'a': 'foo'"));
        assert!(err("a,label\nNaN,x\n").contains("not a finite number"));
        assert!(err("a,label\n,x\n").contains("not a finite number"));
        assert!(err("a,label\n").contains("no data rows"));
        assert!(err("").contains("empty"));
        assert!(err("label\nx\n").contains("no feature columns"));
        assert!(err("a,label\n1,\n").contains("empty label"));
        assert!(err("a,a,label\n1,2,x\n").contains("two columns named 'a'"));
    }
}
