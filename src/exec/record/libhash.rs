//! The soname and SHA-256 of every vendor library file a worker mapped, for the manifest's
//! provenance. The supervisor reads the files (never loads them), once per run. A PyTorch
//! environment maps about 2 GB of libraries, which take 13 s to hash on a 2-core machine, so
//! digests are kept in a cache keyed by path, size, modification time and inode
//! (`$XDG_CACHE_HOME/rocsweep/sha256.tsv`, else `~/.cache/...`): a file that changed in any
//! of these is hashed again. No cache (unwritable, unreadable) only costs the time.

use crate::backend::LibraryFile;
use rayon::prelude::*;
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Fills in each file's soname and SHA-256. A file that cannot be read says why in place of its
/// digest.
pub fn complete(libraries: &mut [LibraryFile]) {
    complete_with(libraries, cache_path())
}

fn complete_with(libraries: &mut [LibraryFile], cache_file: Option<PathBuf>) {
    if libraries.is_empty() {
        return;
    }
    let mut cache = cache_file.as_deref().map(load).unwrap_or_default();
    let keys: Vec<Option<String>> = libraries.iter().map(|l| key(Path::new(&l.path))).collect();
    let fresh: Vec<(usize, String, String)> = libraries
        .par_iter()
        .enumerate()
        .filter(|(i, _)| keys[*i].as_ref().is_none_or(|k| !cache.contains_key(k)))
        .map(|(i, lib)| {
            let (soname, sha) = hash_file(Path::new(&lib.path));
            (i, soname, sha)
        })
        .collect();
    let mut changed = false;
    for (i, soname, sha) in fresh {
        if let Some(k) = &keys[i]
            && !sha.starts_with("unreadable")
        {
            cache.insert(k.clone(), (soname.clone(), sha.clone()));
            changed = true;
        }
        libraries[i].soname = soname;
        libraries[i].sha256 = sha;
    }
    for (lib, k) in libraries.iter_mut().zip(&keys) {
        if lib.sha256.is_empty()
            && let Some((soname, sha)) = k.as_ref().and_then(|k| cache.get(k))
        {
            lib.soname = soname.clone();
            lib.sha256 = sha.clone();
        }
    }
    if changed && let Some(f) = &cache_file {
        save(f, &cache);
    }
}

fn hash_file(path: &Path) -> (String, String) {
    use sha2::Digest as _;
    match std::fs::read(path) {
        Ok(data) => {
            let digest = sha2::Sha256::digest(&data);
            (
                soname(&data),
                digest.iter().map(|b| format!("{b:02x}")).collect(),
            )
        }
        Err(e) => (String::new(), format!("unreadable: {e}")),
    }
}

/// The ELF soname of a library's bytes ("" when it has none or is not ELF).
fn soname(data: &[u8]) -> String {
    let Ok(elf) = object::read::elf::ElfFile64::<object::Endianness>::parse(data) else {
        return String::new();
    };
    let Ok(table) = elf.elf_section_table().dynamic_table(elf.endian(), data) else {
        return String::new();
    };
    (&table)
        .into_iter()
        .find(|d| d.tag == object::elf::DT_SONAME)
        .and_then(|d| table.string(d).ok())
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .unwrap_or_default()
}

/// What identifies one version of a file: path, size, modification time (ns) and inode.
fn key(path: &Path) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    let path = path.to_str().filter(|p| !p.contains(['\t', '\n']))?;
    Some(format!(
        "{path}\t{}\t{}.{}\t{}",
        m.len(),
        m.mtime(),
        m.mtime_nsec(),
        m.ino()
    ))
}

fn cache_path() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("rocsweep").join("sha256.tsv"))
}

type Cache = HashMap<String, (String, String)>;

/// Lines of `key \t soname \t sha256` (the key itself holds four tab-separated fields).
fn load(path: &Path) -> Cache {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Cache::new();
    };
    text.lines()
        .filter_map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            (f.len() == 6 && f[5].len() == 64)
                .then(|| (f[..4].join("\t"), (f[4].to_string(), f[5].to_string())))
        })
        .collect()
}

fn save(path: &Path, cache: &Cache) {
    let mut lines: Vec<String> = cache
        .iter()
        .map(|(k, (so, sha))| format!("{k}\t{so}\t{sha}"))
        .collect();
    lines.sort();
    lines.truncate(4096);
    let text = lines.join("\n") + "\n";
    if let Some(dir) = path.parent()
        && std::fs::create_dir_all(dir).is_ok()
    {
        let _ = crate::results::atomic::write(path, text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_are_cached_by_identity_and_redone_when_the_file_changes() {
        let dir = tempfile::tempdir().unwrap();
        let cache = dir.path().join("cache/rocsweep/sha256.tsv");
        let f = dir.path().join("libx.so.1");
        std::fs::write(&f, b"abc").unwrap();
        let mut libs = vec![LibraryFile {
            path: f.display().to_string(),
            ..LibraryFile::default()
        }];
        complete_with(&mut libs, Some(cache.clone()));
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        assert_eq!(libs[0].sha256, abc);
        let saved = std::fs::read_to_string(&cache).unwrap();
        assert!(saved.contains(abc), "{saved}");
        // A changed file (another size) is hashed again, not read from the cache.
        std::fs::write(&f, b"abcd").unwrap();
        let mut again = vec![LibraryFile {
            path: f.display().to_string(),
            ..LibraryFile::default()
        }];
        complete_with(&mut again, Some(cache.clone()));
        assert_eq!(
            again[0].sha256,
            "88d4266fd4e6338d13b845fcf289579d209c897823b9217da3e161936f031589"
        );
        let missing = dir.path().join("gone.so");
        let mut gone = vec![LibraryFile {
            path: missing.display().to_string(),
            ..LibraryFile::default()
        }];
        complete_with(&mut gone, Some(cache.clone()));
        assert!(
            gone[0].sha256.starts_with("unreadable"),
            "{}",
            gone[0].sha256
        );
    }
}
