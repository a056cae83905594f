#!/usr/bin/env python3
"""Checks the include graph of src/ against the room table of DESIGN.md.

Each room may include only itself and the rooms listed for it below; the domain rooms (trail,
folding, memory) may not include SQLite, HTTP or JSON headers. Exits 1 and lists every violation.
"""
import os
import re
import sys

# room -> rooms it may include (besides itself). Mirrors ../shared/DESIGN.md "Rooms".
ALLOWED = {
    "base": set(),
    "protocol": {"base"},
    "transport": {"protocol", "base"},
    "tokens": {"base"},
    "scrub": {"base"},
    "trail": {"base"},
    "folding": {"trail", "tokens", "scrub", "base"},
    "memory": {"trail", "tokens", "base"},
    "events": {"folding", "memory", "trail", "tokens", "scrub", "base"},
    "gateway": {"protocol", "transport", "folding", "trail", "scrub", "tokens", "base"},
    "model": {"protocol", "transport", "folding", "trail", "memory", "scrub", "tokens", "base"},
    "store": {"trail", "folding", "memory", "model", "base"},
    "server": {"base", "protocol", "transport", "tokens", "scrub", "trail", "folding", "memory",
               "gateway", "model", "store", "events"},
    "cli": {"server", "base", "protocol", "transport", "tokens", "scrub", "trail", "folding",
            "memory", "gateway", "model", "store", "events"},
}
DOMAIN = {"trail", "folding", "memory"}
FORBIDDEN_IN_DOMAIN = re.compile(r'^(sqlite3\.h|nlohmann/|boost/|libpq|httplib)')
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')


def main() -> int:
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
    problems = []
    for room in sorted(os.listdir(root)):
        room_dir = os.path.join(root, room)
        if not os.path.isdir(room_dir):
            continue
        if room not in ALLOWED:
            problems.append(f"src/{room}: not a room of DESIGN.md")
            continue
        for dirpath, _, files in os.walk(room_dir):
            for name in files:
                if not name.endswith((".h", ".cc", ".cpp", ".hpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, os.path.join(root, ".."))
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        first = target.split("/", 1)[0]
                        if "/" in target and first in ALLOWED and first != room:
                            if first not in ALLOWED[room]:
                                problems.append(f"{rel}:{lineno}: room '{room}' may not include "
                                                f"'{target}' (room '{first}')")
                        if "/internal/" in target and first != room:
                            problems.append(f"{rel}:{lineno}: '{target}' is internal to '{first}'")
                        if room in DOMAIN and FORBIDDEN_IN_DOMAIN.match(target):
                            problems.append(f"{rel}:{lineno}: domain room '{room}' may not include "
                                            f"'{target}' (storage/HTTP/JSON belong elsewhere)")
    for p in problems:
        print(p)
    if problems:
        print(f"include graph: {len(problems)} violation(s)")
        return 1
    print("include graph: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
