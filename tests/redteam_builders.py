"""Builders shared by the red-team tests: hostile text, a student's own added cell, and hostile zips (entries with
patched headers, Latin-1 names, corrupt data, a student's own zip)."""
import copy
import json
import struct
import zipfile

from course_paths import DEFINITION_TASKS
from submissions import index_of

XSS = "<img src=x onerror=alert(1)>"


ADDED_CELLS = 100_000


def many_cells(notebook, count=ADDED_CELLS):
    """count one-line cells added after the last definition task's check cell (a vehicle's notebook)."""
    notebook = copy.deepcopy(notebook)
    at = index_of(notebook, f"check_task_{DEFINITION_TASKS[-1]}") + 1
    notebook["cells"][at:at] = [{"cell_type": "code", "metadata": {}, "source": f"x = {i}", "outputs": [],
                                 "execution_count": None} for i in range(count)]
    return notebook


def extra_cell(notebook, after, source):
    """A code cell of the student's own after the cell with grade_id `after`."""
    notebook = copy.deepcopy(notebook)
    notebook["cells"].insert(index_of(notebook, after) + 1, {"cell_type": "code", "metadata": {}, "source": source,
                                                           "outputs": [], "execution_count": None})
    return notebook


# ----- Hostile zips --------------------------------------------------------------------------------------------

def central_record(data, name):
    """Offset of the central directory record of the entry with this (encoded) name."""
    start = data.find(b"PK\x01\x02")
    while start >= 0:
        length = struct.unpack("<H", data[start + 28:start + 30])[0]
        if data[start + 46:start + 46 + length] == name:
            return start
        start = data.find(b"PK\x01\x02", start + 4)
    raise AssertionError(f"no entry {name!r}")


def patch_central(path, name, flag_bits=0, declared_size=None, month0=False):
    """Rewrite one entry's headers: add flag bits (0x1: encrypted), a declared size, a date with month 0."""
    path.write_bytes(patched(path.read_bytes(), name, flag_bits, declared_size, month0))


def patched(data, name, flag_bits=0, declared_size=None, month0=False):
    """The zip's bytes with one entry's headers rewritten (see patch_central)."""
    data = bytearray(data)
    start = central_record(data, name.encode("utf-8"))
    local = struct.unpack("<I", data[start + 42:start + 46])[0]
    for offset in (start + 8, local + 6):
        struct.pack_into("<H", data, offset, struct.unpack("<H", data[offset:offset + 2])[0] | flag_bits)
    if declared_size is not None:
        struct.pack_into("<I", data, start + 24, declared_size)
    if month0:
        struct.pack_into("<H", data, start + 14, struct.unpack("<H", data[start + 14:start + 16])[0] & ~(0xF << 5))
    return bytes(data)


def write_latin1_names(path, names):
    """Store each name in Latin-1 without the UTF-8 flag, as old zip tools do (placeholders written first)."""
    data = path.read_bytes()
    for index, name in enumerate(names):
        placeholder = "".join(c if ord(c) < 128 else chr(ord("A") + index) for c in name).encode("ascii")
        assert data.count(placeholder) == 2, placeholder  # the local header and the central directory
        data = data.replace(placeholder, name.encode("latin-1"))
    path.write_bytes(data)


def latin1_placeholder(name, index):
    return "".join(c if ord(c) < 128 else chr(ord("A") + index) for c in name)


def corrupt_data(path, name):
    """Flip a byte of a stored entry's data: its CRC no longer matches."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(name)
    name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    data[info.header_offset + 30 + name_length + extra_length + 10] ^= 0xFF
    path.write_bytes(bytes(data))


def inner_zip(notebook_name, notebook, encrypted=False, corrupt=False):
    """A student's own zip holding one notebook (encrypted by flag, or cut short)."""
    import io
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(zipfile.ZipInfo(notebook_name, (2026, 11, 20, 10, 0, 0)), json.dumps(notebook))
    data = patched(buffer.getvalue(), notebook_name, flag_bits=0x1) if encrypted else buffer.getvalue()
    return data[: len(data) // 2] if corrupt else data
