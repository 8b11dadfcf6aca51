#!/usr/bin/env python3
"""Checks a rocsweep wheel without installing it: its tags (file name and WHEEL) are
py3-none-manylinux with glibc 2.28 or older, its METADATA has no Requires-Dist, it carries the
rocsweep executable as a script, and that executable asks for no glibc symbol newer than the tag
says. Standard library only. Prints what it found; exits 1 with one line per problem.

usage: wheel_check.py WHEEL [--version VERSION]
"""
import re
import sys
import zipfile

MAX_GLIBC = (2, 28)
ARCHES = ("x86_64", "aarch64")
# manylinux_2_17 is manylinux2014's other name; older aliases (manylinux1, manylinux2010) would
# be glibc 2.5 and 2.12, which a Rust toolchain of today cannot target.
ALIASES = {"manylinux2014": (2, 17)}


def platform_glibc(platform):
    """(major, minor, arch) of a manylinux platform tag, or None."""
    m = re.fullmatch(r"manylinux_(\d+)_(\d+)_(\w+)", platform)
    if m:
        return int(m.group(1)), int(m.group(2)), m.group(3)
    m = re.fullmatch(r"(manylinux\d+)_(\w+)", platform)
    if m and m.group(1) in ALIASES:
        return (*ALIASES[m.group(1)], m.group(2))
    return None


def check_tag(tag, problems):
    parts = tag.split("-")
    if len(parts) != 3:
        problems.append(f"tag {tag!r} is not python-abi-platform")
        return
    python, abi, platforms = parts
    if python != "py3" or abi != "none":
        problems.append(f"tag {tag!r}: want py3-none (a binary, no Python ABI)")
    for platform in platforms.split("."):
        g = platform_glibc(platform)
        if g is None:
            problems.append(f"tag {tag!r}: platform {platform!r} is not manylinux")
        elif g[:2] > MAX_GLIBC:
            problems.append(f"tag {tag!r}: needs glibc {g[0]}.{g[1]}, newer than 2.28")
        elif g[2] not in ARCHES:
            problems.append(f"tag {tag!r}: architecture {g[2]} is not one of {ARCHES}")


def glibc_needed(elf):
    """The newest GLIBC_x.y version the executable names (its version-needed strings)."""
    found = {
        (int(a), int(b))
        for a, b in re.findall(rb"GLIBC_(\d+)\.(\d+)(?:\.\d+)?\x00", elf)
    }
    return max(found) if found else None


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        print(__doc__, file=sys.stderr)
        return 2
    path = argv[1]
    version = None
    if len(argv) == 4 and argv[2] == "--version":
        version = argv[3]
    elif len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    problems = []

    # name-version-python-abi-platform.whl
    name = path.rsplit("/", 1)[-1]
    m = re.fullmatch(r"rocsweep-([^-]+)-([^-]+-[^-]+-[^-]+)\.whl", name)
    if not m:
        problems.append(f"file name {name!r} is not rocsweep-VERSION-TAG.whl")
        file_version, file_tag = None, None
    else:
        file_version, file_tag = m.group(1), m.group(2)
        check_tag(file_tag, problems)
        if version and file_version != version:
            problems.append(f"file name says version {file_version}, Cargo.toml {version}")

    try:
        z = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as e:
        print(f"problem: cannot open {path} as a wheel: {e}", file=sys.stderr)
        return 1
    with z:
        names = z.namelist()
        info = [n for n in names if re.fullmatch(r"rocsweep-[^/]+\.dist-info/[^/]+", n)]
        dist_info = {n.split("/", 1)[1]: n for n in info}
        for need in ("WHEEL", "METADATA", "RECORD"):
            if need not in dist_info:
                problems.append(f"no {need} in the wheel's dist-info")
        tags, requires = [], []
        if "WHEEL" in dist_info:
            wheel = z.read(dist_info["WHEEL"]).decode()
            tags = [line.split(":", 1)[1].strip() for line in wheel.splitlines()
                    if line.startswith("Tag:")]
            if not tags:
                problems.append("WHEEL names no Tag")
            for t in tags:
                check_tag(t, problems)
            if file_tag:
                py, abi, plats = file_tag.split("-")
                named = {f"{py}-{abi}-{p}" for p in plats.split(".")}
                if named != set(tags):
                    problems.append(f"file name's tags {sorted(named)} are not WHEEL's {tags}")
            if "Root-Is-Purelib: false" not in wheel:
                problems.append("WHEEL does not say Root-Is-Purelib: false")
        if "METADATA" in dist_info:
            metadata = z.read(dist_info["METADATA"]).decode()
            requires = [line for line in metadata.splitlines()
                        if line.lower().startswith("requires-dist:")]
            if requires:
                problems.append("METADATA has dependencies: " + "; ".join(requires))
            meta_version = re.search(r"^Version: (.+)$", metadata, re.M)
            if version and (not meta_version or meta_version.group(1).strip() != version):
                problems.append(f"METADATA's Version is not {version}")
        scripts = [n for n in names if re.fullmatch(r"rocsweep-[^/]+\.data/scripts/[^/]+", n)]
        exe = [n for n in scripts if n.endswith("/scripts/rocsweep")]
        if len(exe) != 1:
            problems.append(f"want one rocsweep executable under .data/scripts/, found {scripts}")
        glibc = None
        if exe:
            elf = z.read(exe[0])
            if elf[:4] != b"\x7fELF":
                problems.append(f"{exe[0]} is not an ELF executable")
            machine = {62: "x86_64", 183: "aarch64"}.get(int.from_bytes(elf[18:20], "little"))
            for t in tags:
                g = platform_glibc(t.split("-")[-1])
                if g and g[2] != machine:
                    problems.append(f"{exe[0]} is for {machine or 'another machine'}, tag {t}")
            glibc = glibc_needed(elf)
            if glibc and glibc > MAX_GLIBC:
                problems.append(f"{exe[0]} needs glibc {glibc[0]}.{glibc[1]}, newer than 2.28")
            mode = (z.getinfo(exe[0]).external_attr >> 16) & 0o777
            if not mode & 0o100:
                problems.append(f"{exe[0]} is not executable in the archive (mode {mode:o})")
        other = [n for n in names if n not in info and n not in scripts]

    print(f"file:     {name}")
    print(f"tags:     {', '.join(tags) or '(none)'}")
    print(f"requires: {'; '.join(requires) or '(none)'}")
    print(f"contents: {', '.join(scripts)}" + (f" and {', '.join(other)}" if other else ""))
    if glibc:
        print(f"glibc:    the executable asks for GLIBC_{glibc[0]}.{glibc[1]} at most")
    for p in problems:
        print(f"problem: {p}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
