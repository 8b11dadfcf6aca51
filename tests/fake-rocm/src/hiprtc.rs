//! hipRTC: "compiling" finds the kernel names a source defines (plain `__global__ void NAME(`
//! definitions and instances of macros whose body defines `__global__ void A##_##B(`), and
//! produces a code object that lists them. A source with an `#error` directive fails to compile.

use crate::Registry;
use crate::model;
use crate::rtc_source;
use std::ffi::{c_char, c_void};

const SUCCESS: i32 = 0;
const INVALID_INPUT: i32 = 3;
const INVALID_PROGRAM: i32 = 4;
const COMPILATION: i32 = 6;
const INTERNAL_ERROR: i32 = 11;

const NAMES: &[(i32, &str)] = &[
    (0, "HIPRTC_SUCCESS"),
    (1, "HIPRTC_ERROR_OUT_OF_MEMORY"),
    (2, "HIPRTC_ERROR_PROGRAM_CREATION_FAILURE"),
    (3, "HIPRTC_ERROR_INVALID_INPUT"),
    (4, "HIPRTC_ERROR_INVALID_PROGRAM"),
    (5, "HIPRTC_ERROR_INVALID_OPTION"),
    (6, "HIPRTC_ERROR_COMPILATION"),
    (7, "HIPRTC_ERROR_BUILTIN_OPERATION_FAILURE"),
    (11, "HIPRTC_ERROR_INTERNAL_ERROR"),
    (100, "HIPRTC_ERROR_LINKING"),
];

#[derive(Clone)]
struct Program {
    name: String,
    /// The source alone; the headers given to hiprtcCreateProgram are kept by include name.
    text: String,
    headers: Vec<(String, String)>,
    log: String,
    code: Option<Vec<u8>>,
}

static PROGRAMS: Registry<Program> = Registry::new();

fn call(f: impl FnOnce() -> i32) -> i32 {
    crate::guard(INTERNAL_ERROR, || match model::get() {
        Ok(_) => f(),
        Err(_) => INTERNAL_ERROR,
    })
}

/// Source lines with `\` continuations joined and `//` comments dropped.
fn logical_lines(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for line in src.lines() {
        let line = line.split("//").next().unwrap_or("");
        match line.trim_end().strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(line);
                out.push(std::mem::take(&mut cur));
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '#'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The kernel name after `__global__ void` in `s`, if any (may contain `##` pastes).
fn global_name(s: &str) -> Option<&str> {
    let at = s.find("__global__")?;
    let rest = s[at + "__global__".len()..]
        .trim_start()
        .strip_prefix("void")?;
    let name = ident_at(rest.trim_start());
    (!name.is_empty()).then_some(name)
}

/// The `#error` message of the first `#error` directive, if any.
pub fn error_directive(src: &str) -> Option<(usize, String)> {
    src.lines().enumerate().find_map(|(i, l)| {
        let t = l.trim_start().strip_prefix('#')?.trim_start();
        t.strip_prefix("error")
            .map(|m| (i + 1, m.trim().to_string()))
    })
}

/// Every kernel name the text defines, directly or through a macro instance.
pub fn kernel_names(src: &str) -> Vec<String> {
    let lines = logical_lines(src);
    let mut macros: Vec<(String, Vec<String>, String)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    for l in &lines {
        let t = l.trim_start();
        if let Some(def) = t
            .strip_prefix('#')
            .map(str::trim_start)
            .and_then(|d| d.strip_prefix("define"))
        {
            let def = def.trim_start();
            let ident = ident_at(def);
            if let (Some(params), Some(tmpl)) = (
                def[ident.len()..]
                    .strip_prefix('(')
                    .and_then(|p| p.split(')').next()),
                global_name(def),
            ) {
                let params = params.split(',').map(|p| p.trim().to_string()).collect();
                macros.push((ident.to_string(), params, tmpl.to_string()));
            }
        } else if let Some(n) = global_name(t).filter(|n| !n.contains("##")) {
            names.push(n.to_string());
        }
    }
    for l in lines.iter().filter(|l| !l.trim_start().starts_with('#')) {
        for (ident, params, tmpl) in &macros {
            let mut rest = l.as_str();
            while let Some(at) = rest.find(ident.as_str()) {
                let before_ok = rest[..at]
                    .chars()
                    .next_back()
                    .is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'));
                let after = &rest[at + ident.len()..];
                rest = after;
                let Some(args) = after
                    .trim_start()
                    .strip_prefix('(')
                    .and_then(|a| a.split(')').next())
                else {
                    continue;
                };
                let args: Vec<&str> = args.split(',').map(str::trim).collect();
                if !before_ok || args.len() != params.len() {
                    continue;
                }
                let name: String = tmpl
                    .split("##")
                    .map(|piece| {
                        let piece = piece.trim();
                        params
                            .iter()
                            .position(|p| p == piece)
                            .map_or(piece, |i| args[i])
                    })
                    .collect();
                names.push(name);
            }
        }
    }
    let mut seen = Vec::new();
    names.retain(|n| {
        let new = !seen.contains(n);
        seen.push(n.clone());
        new
    });
    names
}

/// The code object, in the real one's format as far as rocsweep reads it: a 64-bit AMDGPU ELF
/// (e_machine 224, ET_DYN, the target's machine flags), each kernel defined as `NAME` and
/// `NAME.kd`, and a note naming `amdgcn-amd-amdhsa--ARCH`. The ELF is written as a relocatable
/// x86-64 object and its header patched: the fake runs no device code, so no loader reads more.
pub fn code_object(arch: &str, names: &[String]) -> Vec<u8> {
    use object::write::{Object, StandardSection, Symbol, SymbolSection};
    use object::{Architecture, BinaryFormat, Endianness, SymbolFlags, SymbolKind, SymbolScope};
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let text = obj.section_id(StandardSection::Text);
    let note = obj.add_section(Vec::new(), b".note".to_vec(), object::SectionKind::Note);
    let mut desc = format!("amdhsa.target\0amdgcn-amd-amdhsa--{arch}\0").into_bytes();
    desc.resize(desc.len().next_multiple_of(4), 0);
    obj.append_section_data(note, &desc, 4);
    for (i, n) in names.iter().enumerate() {
        for (name, kind) in [
            (n.clone(), SymbolKind::Text),
            (format!("{n}.kd"), SymbolKind::Data),
        ] {
            obj.add_symbol(Symbol {
                name: name.into_bytes(),
                value: i as u64 * 4,
                size: 4,
                kind,
                scope: SymbolScope::Dynamic,
                weak: false,
                section: SymbolSection::Section(text),
                flags: SymbolFlags::None,
            });
        }
    }
    obj.append_section_data(text, &vec![0u8; names.len().max(1) * 4], 4);
    let mut bytes = obj.write().unwrap_or_default();
    if bytes.len() >= 52 {
        bytes[16..18].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
        bytes[18..20].copy_from_slice(&224u16.to_le_bytes()); // EM_AMDGPU
        bytes[48..52].copy_from_slice(&mach(arch).to_le_bytes());
    }
    bytes
}

/// EF_AMDGPU_MACH of the targets the fake's models use (0 for others; rocsweep then checks
/// the note alone).
fn mach(arch: &str) -> u32 {
    match arch {
        "gfx1010" => 0x33,
        "gfx1030" => 0x36,
        "gfx90a" => 0x3f,
        _ => 0,
    }
}

/// The kernel names of a code object made by `code_object`, or None when it is not one.
pub fn kernels_in(code: &[u8]) -> Option<Vec<String>> {
    use object::{Object, ObjectSymbol};
    let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(code).ok()?;
    let names: Vec<String> = elf
        .symbols()
        .filter_map(|s| s.name().ok()?.strip_suffix(".kd").map(String::from))
        .collect();
    Some(names)
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcCreateProgram(
    prog: *mut *mut c_void,
    src: *const c_char,
    name: *const c_char,
    num_headers: i32,
    headers: *const *const c_char,
    include_names: *const *const c_char,
) -> i32 {
    call(|| {
        // SAFETY: NUL-terminated strings and an array of num_headers of them (the C contract).
        let Some(src) = (unsafe { crate::text(src) }) else {
            return INVALID_INPUT;
        };
        if prog.is_null()
            || num_headers < 0
            || (num_headers > 0 && (headers.is_null() || include_names.is_null()))
        {
            return INVALID_INPUT;
        }
        let mut provided = Vec::new();
        for i in 0..num_headers as usize {
            // SAFETY: as above.
            let (h, n) = unsafe {
                (
                    crate::text(*headers.add(i)),
                    crate::text(*include_names.add(i)),
                )
            };
            match (h, n) {
                (Some(h), Some(n)) => provided.push((n, h)),
                _ => return INVALID_INPUT,
            }
        }
        let p = Program {
            // SAFETY: as above.
            name: unsafe { crate::text(name) }.unwrap_or_else(|| "default_program".into()),
            text: src,
            headers: provided,
            log: String::new(),
            code: None,
        };
        // SAFETY: prog checked non-null.
        unsafe { crate::create(&PROGRAMS, prog, p) };
        SUCCESS
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcCompileProgram(
    prog: *mut c_void,
    num_options: i32,
    options: *const *const c_char,
) -> i32 {
    call(|| {
        let Some(mut p) = PROGRAMS.get(prog as usize) else {
            return INVALID_PROGRAM;
        };
        let mut arch = model::get()
            .map(|m| m.device.arch.clone())
            .unwrap_or_default();
        for i in 0..num_options.max(0) as usize {
            // SAFETY: an array of num_options strings (the C contract).
            let o = unsafe { crate::text(*options.add(i)) }.unwrap_or_default();
            if let Some(a) = o
                .strip_prefix("--offload-arch=")
                .or(o.strip_prefix("--gpu-architecture="))
            {
                arch = a.to_string();
            }
        }
        let status = match compile_text(&p) {
            Err((line, msg)) => {
                p.log = format!(
                    "{}:{line}: {msg}\n1 error generated when compiling for {arch}.\n",
                    p.name
                );
                p.code = None;
                COMPILATION
            }
            Ok(text) => {
                p.log.clear();
                p.code = Some(code_object(&arch, &kernel_names(&text)));
                SUCCESS
            }
        };
        PROGRAMS.with(prog as usize, |slot| *slot = p);
        status
    })
}

/// The text the compiler sees (headers first, then the source's active lines), or the first
/// error as (line, message).
fn compile_text(p: &Program) -> Result<String, (usize, String)> {
    let hip = model::get()
        .map(|m| (m.versions.hip.major, m.versions.hip.minor))
        .unwrap_or((0, 0));
    let defined = rtc_source::builtin_macros(hip);
    let names: Vec<String> = p.headers.iter().map(|(n, _)| n.clone()).collect();
    let mut text = String::new();
    for (_, h) in &p.headers {
        let lines =
            rtc_source::active_lines(h, &names, &defined).map_err(|e| (e.line, e.message))?;
        lines
            .iter()
            .for_each(|(_, l)| text.push_str(&format!("{l}\n")));
    }
    let lines =
        rtc_source::active_lines(&p.text, &names, &defined).map_err(|e| (e.line, e.message))?;
    if let Some(e) = rtc_source::redefinition(&lines, &defined) {
        return Err((e.line, e.message));
    }
    let mut src = String::new();
    for (n, l) in &lines {
        if let Some((_, msg)) = error_directive(l) {
            return Err((*n, format!("error: {msg}")));
        }
        src.push_str(l);
        src.push('\n');
    }
    text.push_str(&src);
    Ok(text)
}

fn with_program(prog: *mut c_void, f: impl FnOnce(&Program) -> i32) -> i32 {
    call(|| {
        PROGRAMS
            .get(prog as usize)
            .map_or(INVALID_PROGRAM, |p| f(&p))
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcGetCodeSize(prog: *mut c_void, size: *mut usize) -> i32 {
    with_program(prog, |p| match &p.code {
        // SAFETY: null is checked by put.
        Some(c) if unsafe { crate::put(size, c.len()) } => SUCCESS,
        Some(_) => INVALID_INPUT,
        None => INVALID_PROGRAM,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcGetCode(prog: *mut c_void, code: *mut c_char) -> i32 {
    with_program(prog, |p| match &p.code {
        Some(_) if code.is_null() => INVALID_INPUT,
        Some(c) => {
            // SAFETY: the caller's buffer holds hiprtcGetCodeSize bytes.
            unsafe { std::ptr::copy_nonoverlapping(c.as_ptr(), code.cast::<u8>(), c.len()) };
            SUCCESS
        }
        None => INVALID_PROGRAM,
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcGetProgramLogSize(prog: *mut c_void, size: *mut usize) -> i32 {
    // SAFETY: null is checked by put.
    with_program(prog, |p| {
        match unsafe { crate::put(size, p.log.len() + 1) } {
            true => SUCCESS,
            false => INVALID_INPUT,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcGetProgramLog(prog: *mut c_void, log: *mut c_char) -> i32 {
    // SAFETY: the caller's buffer holds hiprtcGetProgramLogSize bytes.
    with_program(prog, |p| {
        match unsafe { crate::write_text(log, p.log.len() + 1, &p.log) } {
            true => SUCCESS,
            false => INVALID_INPUT,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcDestroyProgram(prog: *mut *mut c_void) -> i32 {
    call(|| {
        // SAFETY: null is checked by get.
        let Some(h) = (unsafe { crate::get(prog) }) else {
            return INVALID_INPUT;
        };
        match PROGRAMS.remove(h as usize) {
            Some(_) => {
                // SAFETY: prog is non-null (read above).
                unsafe { crate::put(prog, std::ptr::null_mut()) };
                SUCCESS
            }
            None => INVALID_PROGRAM,
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcGetErrorString(result: i32) -> *const c_char {
    crate::guard_str(|| {
        let name = NAMES
            .iter()
            .find(|(c, _)| *c == result)
            .map_or("HIPRTC_ERROR_UNKNOWN", |(_, n)| n);
        match model::problem() {
            Some(p) if result == INTERNAL_ERROR => crate::leak(format!("{name}: {p}")),
            _ => crate::leak(name.to_string()),
        }
    })
}

#[unsafe(no_mangle)]
pub unsafe extern "C" fn hiprtcVersion(major: *mut i32, minor: *mut i32) -> i32 {
    call(|| {
        let Ok(m) = model::get() else {
            return INTERNAL_ERROR;
        };
        let v = m.versions.hip;
        // SAFETY: null is checked by put.
        match unsafe { crate::put(major, v.major as i32) && crate::put(minor, v.minor as i32) } {
            true => SUCCESS,
            false => INVALID_INPUT,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_project_kernels() {
        let src = [
            include_str!("../../../kernels/prelude.h"),
            include_str!("../../../kernels/cast.cu"),
            include_str!("../../../kernels/conv_ref.cu"),
        ]
        .join("\n");
        let names = kernel_names(&src);
        for want in [
            "cast_f32_f16",
            "cast_bf16_f32",
            "cast_bf16_bf16",
            "relu_f32",
            "relu_bf16",
            "spin_forever",
            "conv_fwd_ref_f16",
        ] {
            assert!(
                names.iter().any(|n| n == want),
                "{want} missing from {names:?}"
            );
        }
        assert_eq!(names.len(), 9 + 3 + 1 + 3, "{names:?}");
        assert!(error_directive(&src).is_none());
    }

    #[test]
    fn error_directive_is_found() {
        let src = "extern \"C\" __global__ void k(int* p) {}\n  #  error no fp16 here\n";
        assert_eq!(error_directive(src), Some((2, "no fp16 here".into())));
        assert_eq!(kernel_names(src), vec!["k".to_string()]);
    }
}
