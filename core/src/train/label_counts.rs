//! Label precision and recall of an epoch, from the counts the epoch summed on the
//! device: per network, the clean samples among those it selected (those whose loss
//! updated it; for Co-teaching and Co-teaching+ its small-loss picks, which updated the
//! other network, as the authors count them), and how many those were.

/// `(precision, recall)` from `counts` = `[clean picked per network..., picked per
/// network...]` and the number of clean samples in the training set. Precision is the
/// mean over the networks that selected something (a network that selected nothing this
/// epoch, Decouple's once the two agree everywhere, has none; with none left it is NaN);
/// recall the mean share of all clean samples each network selected. Both are means over
/// the networks, so for Co-teaching they are also the means over the sets each network
/// trained on.
pub(super) fn label_precision_recall(counts: &[f32], clean_total: usize) -> (f64, f64) {
    let nets = counts.len() / 2;
    let clean_total = clean_total.max(1) as f64;
    let mut recall = 0.0;
    let mut precisions = Vec::new();
    for i in 0..nets {
        let (clean, picked) = (counts[i] as f64, counts[nets + i] as f64);
        if picked > 0.0 {
            precisions.push(clean / picked);
        }
        recall += clean / clean_total / nets as f64;
    }
    let precision = match precisions.len() {
        0 => f64::NAN,
        defined => precisions.iter().sum::<f64>() / defined as f64,
    };
    (precision, recall)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_network_that_trained_on_nothing_has_no_precision() {
        // Two networks: the first picked 30 samples of which 24 clean, the second none.
        let (p, r) = label_precision_recall(&[24.0, 0.0, 30.0, 0.0], 100);
        assert_eq!(p, 0.8);
        assert_eq!(r, 0.12); // (24/100 + 0/100) / 2
        let (p, r) = label_precision_recall(&[0.0, 0.0], 50);
        assert!(p.is_nan());
        assert_eq!(r, 0.0);
    }
}
