//! What hipRTC handed back, checked before anything loads it: an AMDGPU ELF code object for the
//! target asked for, holding every kernel the backend later looks up by name. `selftest` runs
//! this on every target it compiles for; a library that returns something else is caught here,
//! not at the first launch on somebody's card.

use object::elf::{EM_AMDGPU, ET_DYN, FileHeader64};
use object::read::elf::{ElfFile64, FileHeader};
use object::{Endianness, Object, ObjectSection, ObjectSymbol};

/// `e_flags & EF_AMDGPU_MACH` per target, read with binutils' readelf from code objects that
/// Debian's hipRTC 5.2 compiled here. Targets not listed are checked by the metadata note alone.
const MACH: &[(&str, u32)] = &[
    ("gfx803", 0x2a),
    ("gfx900", 0x2c),
    ("gfx902", 0x2d),
    ("gfx904", 0x2e),
    ("gfx906", 0x2f),
    ("gfx908", 0x30),
    ("gfx909", 0x31),
    ("gfx90c", 0x32),
    ("gfx1010", 0x33),
    ("gfx1011", 0x34),
    ("gfx1012", 0x35),
    ("gfx1030", 0x36),
    ("gfx1031", 0x37),
    ("gfx1032", 0x38),
    ("gfx1033", 0x39),
    ("gfx1035", 0x3d),
    ("gfx1034", 0x3e),
    ("gfx90a", 0x3f),
    ("gfx1013", 0x42),
    ("gfx1036", 0x45),
];

const EF_AMDGPU_MACH: u32 = 0xff;

/// Facts about a code object that passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub bytes: usize,
    pub kernels: usize,
    /// The prelude's `rs_bf16_path` string: which bf16 conversions the build took.
    pub bf16_path: Option<String>,
}

/// Checks `code` against `target` ("gfx1030"; empty = not checked) and `kernels` (each must be
/// defined with its kernel descriptor `NAME.kd`, which hipModuleGetFunction resolves).
pub fn check(code: &[u8], target: &str, kernels: &[String]) -> Result<Checked, String> {
    let elf = ElfFile64::<Endianness>::parse(code).map_err(|e| {
        format!(
            "not a 64-bit ELF code object ({e}); starts {:02x?}",
            head(code)
        )
    })?;
    let endian = elf.endian();
    let hdr: &FileHeader64<Endianness> = elf.elf_header();
    if hdr.e_machine(endian) != EM_AMDGPU {
        return Err(format!(
            "ELF machine {} is not AMDGPU ({EM_AMDGPU})",
            hdr.e_machine(endian)
        ));
    }
    if hdr.e_type(endian) != ET_DYN {
        return Err(format!(
            "ELF type {} is not a loadable code object (ET_DYN)",
            hdr.e_type(endian)
        ));
    }
    if !target.is_empty() {
        check_target(&elf, hdr.e_flags(endian).0, target)?;
    }
    let defined: std::collections::HashSet<&str> = elf
        .dynamic_symbols()
        .chain(elf.symbols())
        .filter(|s| s.is_definition())
        .filter_map(|s| s.name().ok())
        .collect();
    let missing: Vec<&str> = kernels
        .iter()
        .map(String::as_str)
        .filter(|k| !defined.contains(k) || !defined.contains(format!("{k}.kd").as_str()))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} of {} kernels missing from the code object: {}",
            missing.len(),
            kernels.len(),
            missing.join(", ")
        ));
    }
    Ok(Checked {
        bytes: code.len(),
        kernels: kernels.len(),
        bf16_path: c_string_symbol(&elf, BF16_PATH_SYMBOL),
    })
}

/// The prelude's marker of the bf16 path the compiler took.
pub const BF16_PATH_SYMBOL: &str = "rs_bf16_path";

/// The NUL-terminated string a data symbol holds, if the code object defines it.
fn c_string_symbol(elf: &ElfFile64<Endianness>, name: &str) -> Option<String> {
    let sym = elf
        .dynamic_symbols()
        .chain(elf.symbols())
        .find(|s| s.name().is_ok_and(|n| n == name) && s.is_definition())?;
    let section = elf.section_by_index(sym.section_index()?).ok()?;
    let bytes = section.data_range(sym.address(), sym.size()).ok()??;
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
}

fn head(code: &[u8]) -> &[u8] {
    &code[..code.len().min(8)]
}

/// The target named in the AMDGPU metadata note ("amdgcn-amd-amdhsa--gfx1030[:features]") and,
/// where known, in the header's machine flags.
fn check_target(elf: &ElfFile64<Endianness>, flags: u32, target: &str) -> Result<(), String> {
    if let Some((_, mach)) = MACH.iter().find(|(t, _)| *t == target)
        && flags & EF_AMDGPU_MACH != *mach
    {
        return Err(format!(
            "ELF machine flags 0x{:x} are not {target}'s (0x{mach:x})",
            flags & EF_AMDGPU_MACH
        ));
    }
    let wanted = format!("amdgcn-amd-amdhsa--{target}");
    let named = elf
        .sections()
        .filter(|s| s.name().is_ok_and(|n| n.starts_with(".note")))
        .filter_map(|s| s.data().ok())
        .any(|d| names_target(d, wanted.as_bytes()));
    if named {
        Ok(())
    } else {
        Err(format!(
            "the code object's metadata note does not name {wanted}"
        ))
    }
}

/// `wanted` occurs in `data`, not followed by another target-name character (gfx103 must not
/// match gfx1030's note).
fn names_target(data: &[u8], wanted: &[u8]) -> bool {
    data.windows(wanted.len())
        .enumerate()
        .filter(|(_, w)| *w == wanted)
        .any(|(i, _)| {
            data.get(i + wanted.len())
                .is_none_or(|c| !c.is_ascii_alphanumeric())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_not_a_code_object() {
        let e = check(b"FAKE-ROCM-CODE\0", "gfx1030", &[]).unwrap_err();
        assert!(e.contains("not a 64-bit ELF code object"), "{e}");
    }

    #[test]
    fn a_target_name_matches_whole() {
        assert!(names_target(
            b"..amdgcn-amd-amdhsa--gfx1030\0",
            b"amdgcn-amd-amdhsa--gfx1030"
        ));
        assert!(names_target(
            b"amdgcn-amd-amdhsa--gfx1030:xnack-",
            b"amdgcn-amd-amdhsa--gfx1030"
        ));
        assert!(!names_target(
            b"amdgcn-amd-amdhsa--gfx1030",
            b"amdgcn-amd-amdhsa--gfx103"
        ));
    }
}
