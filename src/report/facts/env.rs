//! Env combinations as the pictures and tables label them: only the variables that differ, and
//! each combination's own device when the combinations ran on different ones.

use crate::results::rundata::RunData;
use std::collections::BTreeSet;

/// The device each env combination's units ran on (`analyze::recommend::env_device`).
pub fn env_devices(run: &RunData, envs: &[String]) -> Vec<String> {
    envs.iter()
        .map(|e| crate::analyze::recommend::env_device(run, e))
        .collect()
}

/// Env labels with each combination's device added when the combinations ran on different
/// devices (`RAYON_NUM_THREADS=2 · on AMD EPYC (2 threads)`), so that no label names a device
/// its units did not run on.
pub fn with_devices(labels: Vec<String>, devices: &[String]) -> Vec<String> {
    let distinct: BTreeSet<&str> = devices
        .iter()
        .map(String::as_str)
        .filter(|d| !d.is_empty())
        .collect();
    if distinct.len() < 2 {
        return labels;
    }
    labels
        .into_iter()
        .zip(devices)
        .map(|(l, d)| {
            if d.is_empty() {
                l
            } else {
                format!("{l} · on {d}")
            }
        })
        .collect()
}

/// Env keys shortened to the variables that differ between them, since the fixed ones repeat
/// on every label and push the differing ones out of sight.
pub fn short_env_labels(envs: &[String]) -> Vec<String> {
    let parsed: Vec<Vec<(&str, &str)>> = envs
        .iter()
        .map(|e| {
            e.split(';')
                .filter(|p| !p.is_empty())
                .map(|p| p.split_once('=').unwrap_or((p, "")))
                .collect()
        })
        .collect();
    let names: BTreeSet<&str> = parsed.iter().flatten().map(|(k, _)| *k).collect();
    let differing: BTreeSet<&str> = names
        .into_iter()
        .filter(|name| {
            let values: BTreeSet<Option<&str>> = parsed
                .iter()
                .map(|p| p.iter().find(|(k, _)| k == name).map(|(_, v)| *v))
                .collect();
            values.len() > 1
        })
        .collect();
    envs.iter()
        .zip(&parsed)
        .map(|(key, pairs)| {
            let shown: Vec<String> = pairs
                .iter()
                .filter(|(k, _)| differing.contains(k))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            if !shown.is_empty() {
                shown.join(" ")
            } else if key.is_empty() {
                "no env variables".to_string()
            } else {
                key.replace(';', " ")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_labels_keep_only_differing_variables() {
        let envs = vec!["A=1;B=0".to_string(), "A=1;B=1".to_string()];
        assert_eq!(short_env_labels(&envs), vec!["B=0", "B=1"]);
        assert_eq!(
            short_env_labels(&["".to_string()]),
            vec!["no env variables"]
        );
        assert_eq!(short_env_labels(&["A=1;C=2".to_string()]), vec!["A=1 C=2"]);
    }

    /// Issue 31: a label said `AMD EPYC (1 threads)` for units that ran with 2. When the
    /// combinations ran on different devices, each label names its own.
    #[test]
    fn env_labels_name_each_combinations_own_device_when_they_differ() {
        let labels = vec![
            "RAYON_NUM_THREADS=1".to_string(),
            "RAYON_NUM_THREADS=2".to_string(),
        ];
        let devices = vec![
            "AMD EPYC (1 threads)".to_string(),
            "AMD EPYC (2 threads)".to_string(),
        ];
        assert_eq!(
            with_devices(labels.clone(), &devices),
            vec![
                "RAYON_NUM_THREADS=1 · on AMD EPYC (1 threads)",
                "RAYON_NUM_THREADS=2 · on AMD EPYC (2 threads)"
            ]
        );
        let same = vec!["gpu0".to_string(), "gpu0".to_string()];
        assert_eq!(with_devices(labels.clone(), &same), labels);
    }
}
