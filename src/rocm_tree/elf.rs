//! Whether a shared library file can be mapped whole: its ELF header and program headers are
//! read (those bytes alone, wherever they lie: rocBLAS's file is hundreds of MB) and every loadable
//! segment must lie inside the file. A file cut short by a partial download or copy would be
//! mapped past its end, and the first touch of the missing pages kills the process with SIGBUS
//! naming no file (issue 40, D5); an empty or non-ELF file gets the loader's terse refusal.
//! Pure file logic, like the rest of `rocm_tree`.

use object::read::elf::{FileHeader, ProgramHeader};
use std::io::Read;
use std::path::Path;

/// Ok when `path` is a 64-bit ELF file whose loadable segments all lie inside it; else what is
/// wrong with it, in words.
pub fn check_loadable(path: &Path) -> Result<(), String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let len = f
        .metadata()
        .map_err(|e| format!("cannot read it: {e}"))?
        .len();
    if len == 0 {
        return Err("the file is empty (0 bytes); reinstall it".into());
    }
    let mut head = Vec::new();
    (&mut f)
        .take(8)
        .read_to_end(&mut head)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if !head.starts_with(b"\x7fELF") {
        let start: String = head
            .iter()
            .take(8)
            .map(|b| format!("{b:02x}"))
            .collect::<Vec<_>>()
            .join(" ");
        return Err(format!(
            "it is not a shared library (not an ELF file: it starts with {start}); reinstall it"
        ));
    }
    // Reads only the ranges the parser asks for.
    let data = object::ReadCache::new(f);
    let header = object::elf::FileHeader64::<object::Endianness>::parse(&data)
        .map_err(|e| format!("its ELF header is unreadable ({e}); reinstall it"))?;
    let endian = header
        .endian()
        .map_err(|e| format!("its ELF header is unreadable ({e}); reinstall it"))?;
    let phdrs = header.program_headers(endian, &data).map_err(|e| {
        format!("its program headers are unreadable ({e}): the file is cut short or damaged; reinstall it")
    })?;
    for ph in phdrs {
        if ph.p_type(endian) != object::elf::PT_LOAD {
            continue;
        }
        let end = ph.p_offset(endian).saturating_add(ph.p_filesz(endian));
        if end > len {
            return Err(format!(
                "it is cut short: a loadable segment ends at byte {end} and the file has {len} \
                 (a partial download or copy); reinstall it"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This test binary itself: a whole ELF file.
    fn me() -> std::path::PathBuf {
        std::env::current_exe().expect("current exe")
    }

    #[test]
    fn a_whole_file_passes_and_a_cut_or_foreign_one_says_why() {
        assert_eq!(check_loadable(&me()), Ok(()));
        let tmp = tempfile::tempdir().expect("tmp");
        let bytes = std::fs::read(me()).expect("read");
        let cut = tmp.path().join("cut.so");
        std::fs::write(&cut, &bytes[..100_000]).expect("write");
        let e = check_loadable(&cut).unwrap_err();
        assert!(
            e.starts_with("it is cut short: a loadable segment ends at byte"),
            "{e}"
        );
        let empty = tmp.path().join("empty.so");
        std::fs::write(&empty, b"").expect("write");
        assert_eq!(
            check_loadable(&empty).unwrap_err(),
            "the file is empty (0 bytes); reinstall it"
        );
        let text = tmp.path().join("text.so");
        std::fs::write(&text, b"INPUT(-lfoo)\n").expect("write");
        let e = check_loadable(&text).unwrap_err();
        assert!(
            e.contains("not an ELF file: it starts with 49 4e 50 55"),
            "{e}"
        );
        let head = tmp.path().join("head.so");
        std::fs::write(&head, &bytes[..40]).expect("write");
        assert!(check_loadable(&head).unwrap_err().contains("unreadable"));
    }
}
