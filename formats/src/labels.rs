//! Class labels as files give them: checked against the class count before anything
//! uses them as an index, or named (a CSV column, a text file of names) and turned into
//! class indices with one ordering rule.

use std::path::Path;

use crate::{FormatError, Result};

/// Check every label against the class count; the first one out of range is the error.
pub fn checked_labels(
    labels: impl Iterator<Item = u32>,
    classes: usize,
    path: &Path,
) -> Result<Vec<u32>> {
    labels
        .enumerate()
        .map(|(index, label)| {
            if (label as usize) < classes {
                Ok(label)
            } else {
                Err(FormatError::LabelOutOfRange {
                    path: path.into(),
                    index,
                    label,
                    classes,
                })
            }
        })
        .collect()
}

/// Class names and each sample's class index from named labels: the classes are the
/// distinct names, in numeric order when every name is a number and in text order
/// otherwise (so "2" < "10", and "cat" < "dog").
pub fn classes_of(names: &[String]) -> (Vec<String>, Vec<u32>) {
    let mut classes: Vec<String> = names.to_vec();
    classes.sort();
    classes.dedup();
    let numeric: Option<Vec<f64>> = classes.iter().map(|c| c.parse::<f64>().ok()).collect();
    if let Some(numbers) = numeric {
        let mut keyed: Vec<(f64, String)> = numbers.into_iter().zip(classes).collect();
        keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
        classes = keyed.into_iter().map(|(_, c)| c).collect();
    }
    let index: std::collections::HashMap<&str, u32> = classes
        .iter()
        .enumerate()
        .map(|(i, c)| (c.as_str(), i as u32))
        .collect();
    let labels = names.iter().map(|n| index[n.as_str()]).collect();
    (classes, labels)
}

/// A text file of class names, one a line (as `np.savetxt` or a spreadsheet column
/// writes them): trailing spaces and a final newline are ignored, a blank line is an
/// error naming its line. Returns the classes ([`classes_of`]) and each line's index.
pub fn read_names(path: &Path) -> Result<(Vec<String>, Vec<u32>)> {
    let bytes = std::fs::read(path).map_err(|e| FormatError::io(path, e))?;
    parse_names(&bytes, path)
}

/// [`read_names`] on bytes in memory.
pub fn parse_names(bytes: &[u8], path: &Path) -> Result<(Vec<String>, Vec<u32>)> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| FormatError::malformed(path, format!("is not valid UTF-8 text ({e})")))?;
    let text = text.strip_suffix('\n').unwrap_or(text);
    if text.trim().is_empty() {
        return Err(FormatError::malformed(path, "holds no labels"));
    }
    let names = text
        .split('\n')
        .enumerate()
        .map(|(i, line)| {
            let name = line.trim_end();
            if name.trim().is_empty() {
                Err(FormatError::malformed(
                    path,
                    format!("line {} is empty", i + 1),
                ))
            } else {
                Ok(name.trim_start().to_string())
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(classes_of(&names))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_classes_in_numeric_or_text_order() {
        let p = Path::new("labels.txt");
        let (classes, labels) = parse_names(b"dog\ncat\r\ndog\n", p).unwrap();
        assert_eq!(classes, ["cat", "dog"]);
        assert_eq!(labels, [1, 0, 1]);
        let (classes, labels) = parse_names(b"10\n2\n2", p).unwrap();
        assert_eq!(classes, ["2", "10"]);
        assert_eq!(labels, [1, 0, 0]);
        let e = parse_names(b"a\n\nb\n", p).unwrap_err().to_string();
        assert!(e.contains("line 2 is empty"), "{e}");
        assert!(
            parse_names(b"\n", p)
                .unwrap_err()
                .to_string()
                .contains("holds no labels")
        );
        assert!(
            parse_names(b"\xff\n", p)
                .unwrap_err()
                .to_string()
                .contains("UTF-8")
        );
    }
}
