#!/usr/bin/env python3
"""Checks the include graph of src/ against the room table of docs/architecture.md ("## Rooms").

The table (room | job | may depend on) is the only copy of the map. A file of a room may include
its own room and the rooms its row names; an entry `room (tests only)` only from tests, fuzzers
and testing/ files, and `room (interfaces only: a.h, b.h)` only those headers of the room (tests
may add the room's testing/ fakes). No file includes another room's internal/ headers, and the
domain rooms (trail, folding, memory) include no SQLite, HTTP or JSON headers. A room's private
folders (PRIVATE_DIRS: store/sqlite/, store/postgres/, the implementations behind store/backend.h)
are included by no production file of another room; tests may (a test of group commit drives raw
SQL). Each room's
README.md must have a `Depends on` line naming exactly the rooms the room's code includes.
Exits 1 and lists every violation.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, ".."))
TABLE_DOC = os.path.join("docs", "architecture.md")
DOMAIN = {"trail", "folding", "memory"}
FORBIDDEN_IN_DOMAIN = re.compile(r'^(sqlite3\.h|nlohmann/|boost/|libpq|httplib)')
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]')
# Folders of a room that no production file of another room may include.
PRIVATE_DIRS = {"store": ("sqlite/", "postgres/")}
ENTRY = re.compile(r'^([a-z_]+)(?:\s*\(([^)]*)\))?$')


class Rule:
    """What one room may include of another."""

    def __init__(self, tests_only=False, headers=None):
        self.tests_only = tests_only
        self.headers = headers  # None: any header of the room


def split_entries(cell):
    """Splits 'a, b (x, y), c' at the commas outside parentheses."""
    entries, depth, cur = [], 0, ""
    for ch in cell:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            entries.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        entries.append(cur.strip())
    return entries


def parse_dependencies(cell, where, problems):
    """'server and the rooms it reads: a, b (tests only)' -> {room: Rule}."""
    cell = cell.strip()
    if cell in ("-", ""):
        return {}
    # Prose before a colon that is outside parentheses ("server and the rooms it reads: ...")
    # names rooms too: "server and the rooms it reads" -> server.
    rules = {}
    depth, colon = 0, -1
    for i, ch in enumerate(cell):
        depth += ch == "("
        depth -= ch == ")"
        if ch == ":" and depth == 0:
            colon = i
            break
    if colon >= 0:
        lead = cell[:colon].split()[0]
        rules[lead] = Rule()
        cell = cell[colon + 1:]
    for entry in split_entries(cell):
        m = ENTRY.match(entry.replace("`", ""))
        if not m:
            problems.append(f"{where}: cannot read '{entry}'")
            continue
        room, qualifier = m.group(1), (m.group(2) or "").strip()
        if not qualifier:
            rules[room] = Rule()
        elif qualifier == "tests only":
            rules[room] = Rule(tests_only=True)
        elif qualifier.startswith("interfaces only:"):
            headers = {h.strip() for h in qualifier.split(":", 1)[1].split(",") if h.strip()}
            rules[room] = Rule(headers=headers)
        else:
            problems.append(f"{where}: unknown qualifier '({qualifier})'")
    return rules


def read_table(problems):
    """The rows of the table under '## Rooms' in docs/architecture.md: room -> {room: Rule}."""
    path = os.path.join(ROOT, TABLE_DOC)
    rooms, in_section = {}, False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if line.startswith("## "):
                in_section = line.strip() == "## Rooms"
                continue
            if not in_section or not line.startswith("|"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) != 3 or cells[0] in ("room", "") or set(cells[0]) <= set("-: "):
                continue
            rooms[cells[0]] = parse_dependencies(cells[2], f"{TABLE_DOC}:{lineno}", problems)
    if not rooms:
        problems.append(f"{TABLE_DOC}: no room table under '## Rooms'")
    for room, rules in rooms.items():
        for dep in rules:
            if dep not in rooms:
                problems.append(f"{TABLE_DOC}: room '{room}' names '{dep}', which has no row")
    return rooms


def is_test_file(rel):
    """Tests, fuzz targets, test doubles and contract suites (not linked into contextd)."""
    name = os.path.basename(rel)
    return (name.endswith(("_test.cc", "_fuzz.cc", "_fuzzer.cc", "_bench.cc"))
            or "/testing/" in rel or "_contract." in name or name.startswith("test_util."))


def readme_dependencies(room_dir, rooms):
    """The rooms named in the README's 'Depends on' line (up to the first ';' or the '.' that
    ends the sentence; parenthesised notes skipped), or None without such a line."""
    path = os.path.join(room_dir, "README.md")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        m = re.search(r"Depends on\W*(.*)$", line)
        if not m:
            continue
        # The line and the ones continuing its paragraph ("## Depends on" as a heading: the
        # paragraph under it).
        text, j = m.group(1), i + 1
        while j < len(lines) and not text.strip() and not lines[j].strip():
            j += 1
        while j < len(lines) and lines[j].strip() and not lines[j].lstrip().startswith(
                ("**", "#", "- ", "|")):
            text += " " + lines[j]
            j += 1
        text = re.sub(r"\([^)]*\)", "", text)  # "(interface)" notes are not rooms
        text = re.split(r";|\.(?:\s|$)", text)[0]
        return {w for w in re.findall(r"[a-z_]+", text) if w in rooms}
    return None


def main():
    problems = []
    rooms = read_table(problems)
    src = os.path.join(ROOT, "src")
    for room in sorted(os.listdir(src)):
        room_dir = os.path.join(src, room)
        if not os.path.isdir(room_dir):
            continue
        if room not in rooms:
            problems.append(f"src/{room}: no row in the room table of {TABLE_DOC}")
            continue
        allowed = rooms[room]
        used = set()
        for dirpath, _, files in os.walk(room_dir):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".cpp", ".hpp")):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, ROOT)
                test = is_test_file(rel)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        first, _, rest = target.partition("/")
                        where = f"{rel}:{lineno}"
                        if room in DOMAIN and FORBIDDEN_IN_DOMAIN.match(target):
                            problems.append(f"{where}: domain room '{room}' may not include "
                                            f"'{target}' (storage/HTTP/JSON belong elsewhere)")
                        if not rest or first not in rooms or first == room:
                            continue
                        if "/internal/" in f"/{rest}":
                            problems.append(f"{where}: '{target}' is internal to '{first}'")
                        if not test and rest.startswith(PRIVATE_DIRS.get(first, ())):
                            problems.append(f"{where}: '{target}' is private to '{first}' (use "
                                            f"its interfaces: store/backend.h)")
                        rule = allowed.get(first)
                        if rule is None:
                            problems.append(f"{where}: room '{room}' may not include '{target}' "
                                            f"(room '{first}')")
                            continue
                        if not test:
                            used.add(first)
                        if (rule.tests_only or rest.startswith("testing/")) and not test:
                            problems.append(f"{where}: '{target}' is for tests only in "
                                            f"room '{room}'")
                        elif rule.headers is not None and rest not in rule.headers and not (
                                test and rest.startswith("testing/")):
                            problems.append(f"{where}: room '{room}' may include only "
                                            f"{', '.join(sorted(rule.headers))} of '{first}'")
        named = readme_dependencies(room_dir, rooms)
        readme = f"src/{room}/README.md"
        if named is None:
            problems.append(f"{readme}: missing, or without a 'Depends on' line")
            continue
        for dep in sorted(named - used):
            problems.append(f"{readme}: 'Depends on' names '{dep}', which the code does not "
                            f"include")
        for dep in sorted(used - named):
            problems.append(f"{readme}: 'Depends on' omits '{dep}', which the code includes")
    for p in problems:
        print(p)
    if problems:
        print(f"include graph: {len(problems)} violation(s)")
        return 1
    print(f"include graph: ok ({len(rooms)} rooms, table in {TABLE_DOC})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
