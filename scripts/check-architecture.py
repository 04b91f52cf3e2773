#!/usr/bin/env python3
"""Fails when docs/ARCHITECTURE.md names a path or a Rust item that does not exist.

Reads the names in backticks outside fenced code blocks, in the page's convention:
- a repository path: it starts with a top-level folder (`crates/`, `scripts/`, `docs/`,
  `fuzz/`, `data/`, `.ci/`, `.cargo/`, `.config/`) or is a top-level file (`Cargo.toml`,
  `README.md`); `{a,b}` alternatives and `*` globs expand, and each expansion must exist
  (a trailing `/` must be a folder). A bare `name.rs`, `.py`, `.sh` or `.toml` is an
  error: write the path from the repository root.
- a type or trait, bare and capitalized (`Engine`): a `struct`, `enum`, `trait`, `type`
  or `union` declared `pub` (or `pub(crate)`, `pub(super)`) in some crates/*/src file.
- a crate item, `excerpt_context::assemble` (the engine crate is `excerpt`): the item is
  public at the crate root (defined there, a `pub use` there, or a `pub mod`), or, with
  module segments (`excerpt_retrieve::calibrate::with_score_relevance`), declared `pub`
  at the top of that `pub mod`'s file.
- a member, `Type::name`: a method, associated const or type, field or variant of a
  type or trait named `Type` (its definition's body, or an `impl` of it, at depth one).
Other spans (lowercase words, flags, commands, environment variables) are not checked.
Exit status 1, with the list of missing names and their lines, when one is missing.
usage: check-architecture.py [WORKSPACE_ROOT [DOCUMENT]]
"""
import glob, os, re, sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
doc_path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "docs/ARCHITECTURE.md")
TOP_DIRS = ("crates/", "scripts/", "docs/", "fuzz/", "data/", ".ci/", ".cargo/", ".config/")
TOP_FILES = ("Cargo.toml", "Cargo.lock", "README.md")
STD_TRAITS = {"Default", "FromStr", "Display", "Debug", "Clone", "Send", "Sync",
              "Serialize", "Deserialize", "Iterator"}
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
VIS = r"\bpub(?:\s*\([^)]*\))?\s+"  # any visibility: `pub`, `pub(crate)`, `pub(super)`
PUB = r"\bpub\s+"  # visible outside the crate
KINDS = r"(struct|enum|trait|type|union|fn|const|static|mod)"
QUALS = r"(?:(?:unsafe|async|const|extern|default)\s+)*"

# Comments, strings and character literals, blanked so that braces and `pub` inside
# them count for nothing. Lifetimes (`'a`) have no closing quote and are left alone.
LEX = re.compile(r'//[^\n]*|/\*.*?\*/|r(#*)".*?"\1|b?"(?:\\.|[^"\\])*"|b?\'(?:\\.|[^\'\\])\'',
                 re.S)


def strip(src):
    return LEX.sub(lambda m: '""' if m.group(0)[:1] in 'rb"' else " ", src)


def no_attributes(text):
    """`text` without its attributes (`#[...]`, `#![...]`)."""
    out, i = [], 0
    while True:
        j = text.find("#", i)
        m = re.compile(r"#!?\s*\[").match(text, j) if j >= 0 else None
        if j < 0:
            out.append(text[i:])
            return "".join(out)
        if not m:
            out.append(text[i:j + 1])
            i = j + 1
            continue
        out.append(text[i:j])
        depth, k = 0, m.end() - 1
        while k < len(text):
            depth += text[k] == "["
            depth -= text[k] == "]"
            k += 1
            if depth == 0:
                break
        i = k


def flat(text):
    """`text` with every brace block's inside removed: only the top level is left."""
    prev = None
    while prev != text:
        prev, text = text, re.sub(r"\{[^{}]*\}", ";", text)
    return text


def block(text, open_at):
    """The inside of the brace block opening at `open_at`."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1:i]
    return text[open_at + 1:]


def use_names(group):
    """The names a `pub use` tree brings in: `a::{B, c::D as E}` gives B and E."""
    names, depth, part = [], 0, ""
    for ch in group + ",":
        if ch == "," and depth == 0:
            part = part.strip()
            if "{" in part:
                names += use_names(part[part.index("{") + 1:part.rindex("}")])
            elif part:
                m = re.search(r"(" + IDENT + r"|\*)\s*(?:as\s+(" + IDENT + r"))?$", part)
                if m:
                    names.append(m.group(2) or m.group(1))
            part = ""
            continue
        depth += ch == "{"
        depth -= ch == "}"
        part += ch
    return names


# Every Rust file of the crates, lexed once.
sources = {}
for path in sorted(glob.glob(os.path.join(root, "crates/*/src/**/*.rs"), recursive=True)):
    with open(path, encoding="utf-8") as f:
        sources[path] = no_attributes(strip(f.read()))

types = {}  # type or trait name -> list of (kind, body)
for text in sources.values():
    for m in re.finditer(VIS + r"(struct|enum|trait|type|union)\s+(" + IDENT + r")", text):
        kind, name = m.group(1), m.group(2)
        rest = text[m.end():]
        brace = re.match(r"[^;{(]*\{", rest)
        tuple_ = re.match(r"\s*(?:<[^>]*>)?\s*\(", rest)
        body = "" if tuple_ or not brace else block(text, m.end() + brace.end() - 1)
        types.setdefault(name, []).append((kind, body))
    for m in re.finditer(r"\bimpl\b([^{;]*)\{", text):
        header = re.sub(r"<[^<>]*>", "", re.sub(r"<[^<>]*>", "", m.group(1)))
        self_ty = header.split(" for ")[-1] if " for " in header else header
        self_ty = re.sub(r"\bwhere\b.*", "", self_ty, flags=re.S).strip()
        name = re.findall(IDENT, self_ty)
        if name:
            types.setdefault(name[-1], []).append(("impl", block(text, m.end() - 1)))


def members(kind, body):
    top = flat(body)
    found = set(re.findall(r"\b(?:fn|const|type)\s+(" + IDENT + r")", top))
    if kind == "struct":
        found |= set(re.findall(r"(?:^|[,;{])\s*(?:" + VIS + r")?(" + IDENT + r")\s*:(?!:)", top))
    if kind == "enum":
        found |= set(re.findall(r"(?:^|[,;}])\s*([A-Z][A-Za-z0-9_]*)\b", top))
    return found


crates = {}  # crate name as Rust spells it -> its src folder
for toml in glob.glob(os.path.join(root, "crates/*/Cargo.toml")):
    with open(toml, encoding="utf-8") as f:
        text = f.read()
    lib = re.search(r"\[lib\][^\[]*?\bname\s*=\s*\"([^\"]+)\"", text)
    pkg = re.search(r"\[package\][^\[]*?\bname\s*=\s*\"([^\"]+)\"", text)
    name = (lib or pkg).group(1).replace("-", "_") if (lib or pkg) else None
    if name:
        crates[name] = os.path.join(os.path.dirname(toml), "src")


def module_file(src, segments):
    base = os.path.join(src, *segments)
    for cand in ([os.path.join(src, "lib.rs")] if not segments else
                 [base + ".rs", os.path.join(base, "mod.rs")]):
        if cand in sources:
            return cand
    return None


def exported(path, name):
    """Whether `name` is public at the top level of the module in `path`."""
    text = re.split(r"\bmod tests\s*\{", sources[path])[0]
    for m in re.finditer(PUB + r"use\s+([^;]*);", text):
        names = use_names(m.group(1))
        if name in names or "*" in names:
            return True
    top = flat(text)
    return bool(re.search(PUB + QUALS + KINDS + r"\s+" + re.escape(name) + r"\b", top)
                or re.search(r"macro_rules!\s*" + re.escape(name) + r"\b", text))


def check_crate_path(segs):
    src = crates.get(segs[0])
    if src is None:
        return f"no crate named {segs[0]}"
    # Module segments, then the item (a type's member after it, if capitalized).
    mods, rest = [], segs[1:]
    while len(rest) > 1 and rest[0][:1].islower() and module_file(src, mods + [rest[0]]):
        parent = module_file(src, mods)
        if not re.search(PUB + r"mod\s+" + re.escape(rest[0]) + r"\b", sources[parent]):
            return f"{rest[0]} is not a public module of {'::'.join([segs[0]] + mods)}"
        mods.append(rest.pop(0))
    if len(rest) > 1 and rest[0][:1].islower():
        return f"no module {'::'.join([segs[0]] + mods + [rest[0]])}"
    path = module_file(src, mods)
    if not exported(path, rest[0]):
        return f"{rest[0]} is not public in {'::'.join([segs[0]] + mods)}"
    if len(rest) > 1:
        return check_member(rest[0], rest[1])
    return None


def check_member(ty, member):
    defs = types.get(ty)
    if not defs:
        return f"no type or trait {ty}"
    if any(member in members(kind, body) for kind, body in defs):
        return None
    return f"{ty} has no member {member}"


def expand(path):
    m = re.search(r"\{([^{}]*)\}", path)
    if not m:
        return [path]
    return [x for alt in m.group(1).split(",")
            for x in expand(path[:m.start()] + alt + path[m.end():])]


with open(doc_path, encoding="utf-8") as f:
    lines = f.read().split("\n")
missing, checked, fenced = [], 0, False
for number, line in enumerate(lines, 1):
    if line.lstrip().startswith("```"):
        fenced = not fenced
        continue
    if fenced:
        continue
    for span in re.findall(r"`([^`]+)`", line):
        problem = None
        if span.startswith(TOP_DIRS) or span in TOP_FILES:
            checked += 1
            for p in expand(span):
                hits = glob.glob(os.path.join(root, p))
                if not hits or (p.endswith("/") and not os.path.isdir(hits[0])):
                    problem = f"no such path {p}"
                    break
        elif re.fullmatch(r"[\w.-]+\.(rs|py|sh|toml)", span):
            checked += 1
            problem = "a file named without its path from the repository root"
        elif re.fullmatch(IDENT + r"(::" + IDENT + r")+", span):
            checked += 1
            segs = span.split("::")
            if segs[0] == "excerpt" or segs[0].startswith("excerpt_"):
                problem = check_crate_path(segs)
            elif segs[0][:1].isupper() and len(segs) == 2:
                problem = check_member(segs[0], segs[1])
            else:
                problem = "not a crate path or Type::member"
        elif re.fullmatch(r"[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*", span):
            if span in STD_TRAITS:
                continue
            checked += 1
            if not any(k != "impl" for k, _ in types.get(span, [])):
                problem = f"no public type or trait {span}"
        if problem:
            missing.append(f"{os.path.basename(doc_path)}:{number}: `{span}`: {problem}")
if missing:
    print("\n".join(missing))
    print(f"{len(missing)} of {checked} names in {doc_path} do not exist")
    sys.exit(1)
print(f"all {checked} names in {os.path.basename(doc_path)} exist")
