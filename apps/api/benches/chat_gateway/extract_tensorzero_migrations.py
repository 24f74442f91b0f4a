"""Writes TensorZero's PostgreSQL migrations out of the pinned `tensorzero` wheel.

The wheel's embedded gateway refuses to start on a database its migrations have not prepared,
and only TensorZero's standalone binary, which no package registry offers, can apply them.
The migrations are in the wheel all the same: sqlx's `migrate!` compiles each one into
`tensorzero.abi3.so` as a `Migration` whose SQL is a `&'static str`, a pointer the dynamic
linker fills in (an R_X86_64_RELATIVE relocation whose addend is the text's address) followed
by its length. So this reads the library's relative relocations, takes every (address,
length) pair whose length one of the listed migrations has, and keeps the text whose SHA-384
(the checksum sqlx records) is the listed one. Nothing is guessed: a migration not found is
an error naming it.

Usage: extract_tensorzero_migrations.py <tensorzero.abi3.so> <list> <output directory>
The list (tensorzero_migrations.sha384) has one `set/file length sha384` line per migration;
the files are written to <output directory>/<set>/<file>.
"""

from __future__ import annotations

import hashlib
import mmap
import pathlib
import struct
import sys

SHT_RELA = 4
PT_LOAD = 1
R_X86_64_RELATIVE = 8


def listed(path: pathlib.Path) -> dict[int, list[tuple[str, str]]]:
    """The list's migrations by length: (set/file, SHA-384) pairs."""
    by_length: dict[int, list[tuple[str, str]]] = {}
    for line in path.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, length, digest = line.split()
        by_length.setdefault(int(length), []).append((name, digest))
    return by_length


def texts(library: bytes, by_length: dict[int, list[tuple[str, str]]]) -> dict[str, bytes]:
    """The listed migrations found in an x86-64 ELF shared library, by name."""
    if library[:4] != b"\x7fELF" or library[4] != 2 or library[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (machine,) = struct.unpack_from("<H", library, 0x12)
    if machine != 62:
        raise ValueError(f"not an x86-64 library (e_machine {machine})")
    phoff, shoff = struct.unpack_from("<QQ", library, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", library, 0x36)
    segments = []
    for index in range(phnum):
        kind, _, offset, vaddr, _, filesz = struct.unpack_from(
            "<IIQQQQ", library, phoff + index * phentsize
        )
        if kind == PT_LOAD:
            segments.append((vaddr, offset, filesz))

    def file_offset(address: int) -> int | None:
        for vaddr, offset, size in segments:
            if vaddr <= address < vaddr + size:
                return offset + address - vaddr
        return None

    found: dict[str, bytes] = {}
    for index in range(shnum):
        header = struct.unpack_from("<IIQQQQIIQQ", library, shoff + index * shentsize)
        kind, offset, size = header[1], header[4], header[5]
        if kind != SHT_RELA:
            continue
        for entry in range(offset, offset + size, 24):
            where, info, addend = struct.unpack_from("<QQq", library, entry)
            if info & 0xFFFFFFFF != R_X86_64_RELATIVE:
                continue
            slot = file_offset(where)
            start = file_offset(addend)
            if slot is None or start is None or slot + 16 > len(library):
                continue
            (length,) = struct.unpack_from("<Q", library, slot + 8)
            candidates = by_length.get(length)
            if not candidates:
                continue
            text = library[start : start + length]
            digest = hashlib.sha384(text).hexdigest()
            for name, wanted in candidates:
                if digest == wanted:
                    found[name] = bytes(text)
    return found


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    library_path, list_path, out = map(pathlib.Path, sys.argv[1:])
    by_length = listed(list_path)
    with library_path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as library:
        found = texts(library, by_length)
    wanted = sorted(name for pairs in by_length.values() for name, _ in pairs)
    missing = [name for name in wanted if name not in found]
    if missing:
        sys.exit(f"{library_path} holds no migration listed as: {', '.join(missing)}")
    for name in wanted:
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(found[name])
    print(f"{len(wanted)} migrations written to {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
