#!/usr/bin/env python3
"""Builds the 50 MiB mixed corpus for bench/tokens (deterministic for a given machine image).

Real text found on a Debian machine, interleaved in 64 KiB chunks by weight:
  40% C/C++ headers (/usr/include), 20% agent traffic (/work/shared/workloads/*.jsonl: raw JSON
  lines and the decoded tool results/tasks), 15% English docs (/usr/share/doc, common-licenses),
  20% translations in every language (msgstr of /usr/share/locale/*/LC_MESSAGES/*.mo: CJK,
  Arabic, Devanagari, Cyrillic, ...), 5% emoji and mixed-script samples.
Usage: make_corpus.py OUT [MiB]
"""
import glob
import gzip
import json
import os
import random
import struct
import sys

CHUNK = 64 * 1024


def read_files(paths, limit):
    """Yields the bytes of files (valid UTF-8 only) until `limit` bytes."""
    total = 0
    for p in paths:
        try:
            with (gzip.open(p, "rb") if p.endswith(".gz") else open(p, "rb")) as f:
                data = f.read()
            data.decode("utf-8")
        except (OSError, UnicodeDecodeError, EOFError):
            continue
        yield data
        total += len(data)
        if total >= limit:
            return


def headers(limit):
    paths = sorted(glob.glob("/usr/include/**/*.h", recursive=True) +
                   glob.glob("/usr/include/c++/**/*", recursive=True))
    return read_files([p for p in paths if os.path.isfile(p)], limit)


def docs(limit):
    paths = sorted(glob.glob("/usr/share/common-licenses/*"))
    paths += sorted(glob.glob("/usr/share/doc/**/*", recursive=True))
    return read_files([p for p in paths if os.path.isfile(p) and not os.path.islink(p)], limit)


def agent(limit):
    total = 0
    for p in sorted(glob.glob("/work/shared/workloads/*.jsonl")):
        with open(p, "rb") as f:
            for line in f:
                yield line
                total += len(line)
                obj = json.loads(line)
                parts = [obj.get("task") or ""]
                for step in obj.get("steps", []):
                    c = step.get("content")
                    if isinstance(c, str):
                        parts.append(c)
                text = "\n".join(parts).encode("utf-8", "replace")
                yield text
                total += len(text)
                if total >= limit:
                    return


def translations(limit):
    total = 0
    for p in sorted(glob.glob("/usr/share/locale/*/LC_MESSAGES/*.mo")):
        try:
            with open(p, "rb") as f:
                mo = f.read()
            magic = struct.unpack("<I", mo[:4])[0]
            endian = "<" if magic == 0x950412DE else ">"
            _, n, _, trans_off = struct.unpack(endian + "4I", mo[4:20])
            out = []
            for i in range(1, n):  # entry 0 is the header
                length, off = struct.unpack(endian + "2I", mo[trans_off + 8 * i:trans_off + 8 * i + 8])
                s = mo[off:off + length]
                s.decode("utf-8")
                out.append(s.replace(b"\0", b"\n"))
        except (OSError, UnicodeDecodeError, struct.error):
            continue
        data = b"\n".join(out) + b"\n"
        yield data
        total += len(data)
        if total >= limit:
            return


SAMPLES = [
    "👨‍👩‍👧‍👦 family time 👍🏽 great job 👩🏾‍💻 coding 🏳️‍🌈 🇺🇸🇫🇷🇯🇵 1️⃣ ❤️‍🔥 😀😃😄😁 ✨🚀🔥",
    "自然语言处理是人工智能的一个重要分支，它研究如何让计算机理解人类语言。",
    "これは日本語の文章です。カタカナ、ひらがな、そして漢字が混在しています。",
    "안녕하세요, 세계! 한국어 텍스트는 띄어쓰기를 사용합니다.",
    "مرحبا بالعالم! هذا نصّ عربيّ مع تشكيل: بِسْمِ اللَّهِ الرَّحْمٰنِ الرَّحِيمِ",
    "नमस्ते दुनिया। यह हिन्दी में लिखा गया एक वाक्य है, जिसमें संयुक्ताक्षर हैं।",
    "Привет, мир! Это русский текст с ёлками и ЗАГЛАВНЫМИ буквами.",
    "Γειά σου Κόσμε! Ελληνικά με τόνους και διαλυτικά: ϊ ΰ.",
    "สวัสดีชาวโลก ภาษาไทยไม่มีช่องว่างระหว่างคำ",
    "Z̤̮͎a̴̡l̷g̸o t̶e̵x̷t with combining marks, e\u0301te\u0301, n\u0303",
]


def samples(limit):
    rng = random.Random(4)
    total = 0
    while total < limit:
        line = " ".join(rng.choice(SAMPLES) for _ in range(8)).encode("utf-8") + b"\n"
        yield line
        total += len(line)


def chunks(gen):
    buf = b""
    for data in gen:
        buf += data
        while len(buf) >= CHUNK:
            cut = CHUNK
            while cut < len(buf) and (buf[cut] & 0xC0) == 0x80:  # keep UTF-8 whole
                cut += 1
            yield buf[:cut]
            buf = buf[cut:]
    if buf:
        yield buf


def main():
    out = sys.argv[1]
    size = int(sys.argv[2] if len(sys.argv) > 2 else 50) * 1024 * 1024
    weights = [("headers", headers, 40), ("agent", agent, 20), ("docs", docs, 15),
               ("translations", translations, 20), ("samples", samples, 5)]
    sources = [(name, chunks(fn(size)), w) for name, fn, w in weights]
    got = {name: 0 for name, _, _ in weights}
    written = 0
    with open(out, "wb") as f:
        while written < size and sources:
            # The source furthest below its share goes next.
            name, it, w = min(sources, key=lambda s: got[s[0]] / s[2])
            chunk = next(it, None)
            if chunk is None:
                sources = [s for s in sources if s[0] != name]
                continue
            if len(chunk) > size - written:  # the last chunk: do not end inside a character
                chunk = chunk[:size - written].decode("utf-8", "ignore").encode("utf-8")
            f.write(chunk)
            got[name] += len(chunk)
            written += len(chunk)
            if len(chunk) == 0:
                break
    print(" ".join(f"{k}={v}" for k, v in got.items()), f"total={written}", file=sys.stderr)


if __name__ == "__main__":
    main()
