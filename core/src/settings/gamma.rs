//! gamma, the fraction of labels a person believes wrong in their own data (the paper
//! sets k from the noise rate, which no recipe states for a person's own labels): given
//! as a number, or as the audit of the same data whose estimate it takes.

use std::path::Path;

use crate::error::refuse;
use crate::{Error, Result};

/// gamma from what was given (`--gamma`): a number, or the estimated noise rate of the
/// audit whose folder or `summary.json` it names.
pub fn noise_estimate(given: &str) -> Result<f64> {
    if let Ok(rate) = given.parse::<f64>() {
        return Ok(rate);
    }
    let path = Path::new(given);
    let summary = match path.is_dir() {
        true => path.join("summary.json"),
        false => path.to_path_buf(),
    };
    if !summary.is_file() {
        return refuse(format!(
            "--gamma {given}: neither a number nor an audit's folder or summary.json"
        ));
    }
    let text = std::fs::read_to_string(&summary).map_err(|e| Error::io(&summary, e))?;
    let doc: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| Error::malformed(&summary, format!("not valid JSON: {e}")))?;
    match doc["estimated_noise_rate"].as_f64() {
        Some(rate) => Ok(rate),
        None => refuse(format!(
            "{}: no estimated_noise_rate (not the summary.json of taks audit)",
            summary.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// gamma is a number, or the estimate of an audit named by its folder or its
    /// summary.json; anything else is refused with what it is not.
    #[test]
    fn gamma_is_a_number_or_an_audits_estimate() {
        assert_eq!(noise_estimate("0.3").unwrap(), 0.3);
        let dir = std::env::temp_dir().join(format!("taks-gamma-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("summary.json"),
            r#"{"samples": 10, "estimated_noise_rate": 0.215}"#,
        )
        .unwrap();
        assert_eq!(noise_estimate(dir.to_str().unwrap()).unwrap(), 0.215);
        let file = dir.join("summary.json");
        assert_eq!(noise_estimate(file.to_str().unwrap()).unwrap(), 0.215);
        std::fs::write(&file, r#"{"test_accuracy": 0.9}"#).unwrap();
        let err = noise_estimate(file.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("no estimated_noise_rate"), "{err}");
        std::fs::write(&file, "{").unwrap();
        let err = noise_estimate(file.to_str().unwrap())
            .unwrap_err()
            .to_string();
        assert!(err.contains("not valid JSON"), "{err}");
        let err = noise_estimate("half").unwrap_err().to_string();
        assert!(err.contains("neither a number nor"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
