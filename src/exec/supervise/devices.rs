//! `--devices all|0,1,...`: one worker pool per device. A device becomes a *slot*: a label for
//! the CSV's `device_index` column and the environment its workers get (HIP_VISIBLE_DEVICES for
//! rocm, CUDA_VISIBLE_DEVICES for cuda, and ROCSWEEP_DEVICE_INDEX for every backend). The
//! supervisor only sees the extra environment; what it means is decided here.

pub use crate::exec::worker::protocol::INDEX_VAR;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DeviceSel {
    /// Every device the backend sees.
    All,
    /// These indices, in this order.
    List(Vec<usize>),
}

impl DeviceSel {
    /// Parses `all` or `0,1,3` (clap calls this for `--devices`, so a bad value names the flag).
    pub fn parse(text: &str) -> Result<DeviceSel, String> {
        let t = text.trim();
        if t == "all" {
            return Ok(DeviceSel::All);
        }
        let mut v: Vec<usize> = Vec::new();
        for part in t.split(',') {
            let p = part.trim();
            let i = p.parse::<usize>().map_err(|_| {
                format!("`{p}` is not a device index; expected `all` or indices like 0,1")
            })?;
            if v.contains(&i) {
                return Err(format!("device {i} is named twice"));
            }
            v.push(i);
        }
        Ok(DeviceSel::List(v))
    }
}

/// The variable that restricts a backend's workers to one device, if the backend has devices.
pub fn visibility_var(backend: &str) -> Option<&'static str> {
    match backend {
        "rocm" => Some("HIP_VISIBLE_DEVICES"),
        "cuda" => Some("CUDA_VISIBLE_DEVICES"),
        _ => None,
    }
}

/// One worker pool's device: its label (the `device_index` column) and its workers' extra env.
#[derive(Clone, Debug, PartialEq)]
pub struct Slot {
    pub index: usize,
    pub env: Vec<(String, String)>,
}

/// The slots for a selection. `backend` is the backend the workers really opened (not `auto`),
/// `seen` how many devices an unrestricted worker of it saw, and `parent` the visibility
/// variable's value in rocsweep's own environment: if the user already narrowed the devices,
/// index i means the i-th device of that list, as it does for the libraries themselves.
pub fn slots(
    sel: &DeviceSel,
    backend: &str,
    seen: usize,
    parent: Option<&str>,
) -> Result<Vec<Slot>, String> {
    let var = visibility_var(backend);
    let indices: Vec<usize> = match sel {
        // The CPU is one device (`all` is that one).
        DeviceSel::All if var.is_none() => (0..seen.max(1)).collect(),
        DeviceSel::All if seen == 0 => {
            return Err(format!(
                "--devices all: the {backend} backend sees no devices"
            ));
        }
        DeviceSel::All => (0..seen).collect(),
        DeviceSel::List(v) => v.clone(),
    };
    let parent: Option<Vec<String>> = parent
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| p.split(',').map(|s| s.trim().to_string()).collect());
    let mut out = Vec::new();
    for i in indices {
        let mut env = vec![(INDEX_VAR.to_string(), i.to_string())];
        // The CPU backend is one device even when it reports none.
        let have = if var.is_none() { seen.max(1) } else { seen };
        if i >= have {
            let which = match have {
                0 => String::new(),
                1 => " (0)".to_string(),
                n => format!(" (0..={})", n - 1),
            };
            return Err(format!(
                "--devices: device {i} does not exist; the {backend} backend has {have} device(s){which}"
            ));
        }
        if let Some(var) = var {
            let value = match &parent {
                Some(list) => list.get(i).cloned().unwrap_or_else(|| i.to_string()),
                None => i.to_string(),
            };
            env.push((var.to_string(), value));
        }
        out.push(Slot { index: i, env });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_all_or_a_list_without_repeats() {
        assert_eq!(DeviceSel::parse("all"), Ok(DeviceSel::All));
        assert_eq!(DeviceSel::parse("0,1"), Ok(DeviceSel::List(vec![0, 1])));
        assert_eq!(DeviceSel::parse("3"), Ok(DeviceSel::List(vec![3])));
        assert!(DeviceSel::parse("0,0").unwrap_err().contains("twice"));
        assert!(DeviceSel::parse("").is_err());
        assert!(DeviceSel::parse("gpu0").unwrap_err().contains("`gpu0`"));
        assert!(DeviceSel::parse("0,-1").is_err());
    }

    #[test]
    fn slots_set_the_backend_variable_and_respect_a_narrowed_parent() {
        let s = slots(&DeviceSel::All, "rocm", 2, None).unwrap();
        assert_eq!(s.len(), 2);
        assert!(
            s[1].env
                .contains(&("HIP_VISIBLE_DEVICES".into(), "1".into()))
        );
        assert!(s[1].env.contains(&(INDEX_VAR.into(), "1".into())));
        let s = slots(&DeviceSel::List(vec![1]), "cuda", 2, Some("4,6")).unwrap();
        assert!(
            s[0].env
                .contains(&("CUDA_VISIBLE_DEVICES".into(), "6".into()))
        );
        let e = slots(&DeviceSel::List(vec![2]), "cuda", 2, None).unwrap_err();
        assert!(e.contains("device 2 does not exist"), "{e}");
        // The CPU: one device; `all` is it, and device 1 does not exist.
        assert_eq!(slots(&DeviceSel::All, "cpu", 1, None).unwrap().len(), 1);
        let e = slots(&DeviceSel::List(vec![0, 1]), "cpu", 1, None).unwrap_err();
        assert!(
            e.contains("device 1 does not exist; the cpu backend has 1 device(s) (0)"),
            "{e}"
        );
        // A backend that says it has two (the tests' ROCSWEEP_TEST_CPU_DEVICES=2) gets two pools.
        let s = slots(&DeviceSel::List(vec![0, 1]), "cpu", 2, None).unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[1].env, vec![(INDEX_VAR.to_string(), "1".to_string())]);
        // A GPU backend that sees none has no device 0.
        assert!(slots(&DeviceSel::List(vec![0]), "rocm", 0, None).is_err());
    }
}
