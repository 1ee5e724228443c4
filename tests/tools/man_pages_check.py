#!/usr/bin/python3
"""The man pages of docs/man/ cannot drift from the code (issue 20).

    man_pages_check.py mcgwctl --page docs/man/mcgwctl.8.scd --binary build/.../mcgwctl
        every command of mcgwctl (each subcommand path, as `mcgwctl --help` and
        `mcgwctl PATH --help` list them, walked recursively) is in the page's
        COMMANDS section and nothing else is; each command names exactly the
        options it takes (its own and its group's, e.g. plan's -c/--config);
        the OPTIONS section names exactly the options of mcgwctl itself.
    man_pages_check.py mcgwd --page docs/man/mcgwd.8.scd --binary build/.../mcgwd
        the OPTIONS section names exactly the options `mcgwd --help` lists.
    man_pages_check.py yaml --page docs/man/mcgw.yaml.5.scd --yang config/yang/mcgw.yang
        the TOP-LEVEL KEYS section names exactly the top-level data nodes of
        the YANG module.

The page format these read: a section starts with "# TITLE"; an item of a
section is a line that starts with "*" (not indented) and its text is
indented below it.  A COMMANDS item starts with the command's bold path
(*show tunnels*) and writes each option it takes in bold (*--json*,
*-c*|*--config*); an OPTIONS item writes the option's names in bold.

After a check passes, the same check is run on the page with each of its
items removed in turn, and each of those must fail: the check can fail.
Exit 0 when the page matches, 1 when it does not (each difference printed).
"""

import argparse
import re
import subprocess
import sys

# --- scdoc pages ---------------------------------------------------------------


def sections(text):
    """{TITLE: [lines]} of an scdoc page (lines of '# TITLE' sections)."""
    out, current = {}, None
    for line in text.split("\n"):
        m = re.match(r"^# (.+?)\s*$", line)
        if m:
            current = m.group(1).strip()
            out[current] = []
        elif current is not None:
            out[current].append(line)
    return out


def items(lines):
    """The item lines of a section: not indented, starting with '*'."""
    return [l for l in lines if l.startswith("*")]


def bold_options(line):
    """Every bold option (*-x*, *--xyz*) of a line."""
    return set(re.findall(r"\*(-[^*\s]+)\*", line))


def page_commands(page_text):
    """{command path: options} of the COMMANDS section."""
    secs = sections(page_text)
    if "COMMANDS" not in secs:
        raise SystemExit("the page has no COMMANDS section")
    out = {}
    for line in items(secs["COMMANDS"]):
        m = re.match(r"^\*([^*]+)\*", line)
        path = " ".join(m.group(1).split())
        if path in out:
            raise SystemExit("the page lists '%s' twice" % path)
        out[path] = bold_options(line)
    return out


def page_options(page_text):
    """The option names of the OPTIONS section."""
    secs = sections(page_text)
    if "OPTIONS" not in secs:
        raise SystemExit("the page has no OPTIONS section")
    out = set()
    for line in items(secs["OPTIONS"]):
        out |= bold_options(line)
    return out


def page_keys(page_text):
    """The keys of the TOP-LEVEL KEYS section."""
    secs = sections(page_text)
    if "TOP-LEVEL KEYS" not in secs:
        raise SystemExit("the page has no TOP-LEVEL KEYS section")
    out = set()
    for line in items(secs["TOP-LEVEL KEYS"]):
        m = re.match(r"^\*([^*]+)\*\s*$", line)
        if not m:
            raise SystemExit("not a key line: %r" % line)
        out.add(m.group(1))
    return out


def without_item(page_text, section, index):
    """The page with the index-th item of a section (and its text) removed."""
    lines = page_text.split("\n")
    out, current, seen, skipping = [], None, -1, False
    for line in lines:
        m = re.match(r"^# (.+?)\s*$", line)
        if m:
            current = m.group(1).strip()
        if current == section and line.startswith("*"):
            seen += 1
            skipping = seen == index
            if skipping:
                continue
        elif skipping and (line.startswith("\t") or line.strip() == ""):
            continue
        else:
            skipping = False
        out.append(line)
    return "\n".join(out)


# --- CLI11 help ------------------------------------------------------------------


def help_of(binary, path):
    """(options, subcommands, runnable) from `binary PATH... --help` (CLI11)."""
    r = subprocess.run([binary] + list(path) + ["--help"], capture_output=True, text=True,
                       timeout=30)
    if r.returncode != 0:
        raise SystemExit("%s %s --help exited %d: %s" % (binary, " ".join(path), r.returncode,
                                                         r.stderr))
    options, subs, section = set(), [], None
    runnable = True
    for line in r.stdout.split("\n"):
        if line.startswith("Usage:"):
            # A command that needs a subcommand says SUBCOMMAND, not [SUBCOMMAND].
            runnable = not re.search(r"(?<!\[)SUBCOMMAND\b", line)
            continue
        m = re.match(r"^(\w+):\s*$", line)
        if m:
            section = m.group(1).lower()
            continue
        m = re.match(r"^  (\S+)", line)  # an entry; its wrapped text is indented deeper
        if not m:
            continue
        if section == "options":
            options |= set(m.group(1).split(","))
        elif section == "subcommands":
            subs.append(m.group(1))
    if section is None:
        raise SystemExit("%s %s --help printed no section: %r" % (binary, " ".join(path),
                                                                   r.stdout))
    return options, subs, runnable


HELP = {"-h", "--help"}


def cli_commands(binary):
    """({command path: options}, root options) of a CLI11 program.  A command's
    options are its own and its groups' (the root's excepted), without -h/--help."""
    root_options, subs, _ = help_of(binary, [])
    out = {}

    def walk(path, inherited):
        options, children, runnable = help_of(binary, path)
        options = (options - HELP) | inherited
        if runnable or not children:
            out[" ".join(path)] = options
        for c in children:
            walk(path + [c], options)

    for s in subs:
        walk([s], set())
    return out, root_options


# --- YANG ------------------------------------------------------------------------


def yang_tokens(text):
    """The tokens of a YANG module: strings (quotes removed, '+' joined),
    words, ';', '{' and '}'."""
    tokens, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise SystemExit("unterminated comment in the YANG module")
            i = j + 2
        elif c in ";{}":
            tokens.append(c)
            i += 1
        elif c in "\"'":
            j, s = i + 1, []
            while j < n and text[j] != c:
                if c == '"' and text[j] == "\\" and j + 1 < n:
                    s.append(text[j:j + 2])
                    j += 2
                else:
                    s.append(text[j])
                    j += 1
            if j >= n:
                raise SystemExit("unterminated string in the YANG module")
            value = "".join(s)
            if len(tokens) >= 2 and tokens[-1] == "+" and isinstance(tokens[-2], tuple):
                tokens.pop()
                value = tokens.pop()[1] + value
            tokens.append(("str", value))
            i = j + 1
        else:
            j = i
            while j < n and not text[j].isspace() and text[j] not in ";{}\"'":
                j += 1
            word = text[i:j]
            tokens.append(word if word == "+" else ("str", word))
            i = j
    return tokens


def yang_statements(tokens, pos=0, depth=0):
    """[(keyword, argument, substatements)] from pos to the closing brace."""
    out = []
    while pos < len(tokens):
        t = tokens[pos]
        if t == "}":
            if depth == 0:
                raise SystemExit("unbalanced '}' in the YANG module")
            return out, pos + 1
        if not isinstance(t, tuple):
            raise SystemExit("unexpected %r in the YANG module" % (t,))
        keyword, pos = t[1], pos + 1
        arg = None
        if pos < len(tokens) and isinstance(tokens[pos], tuple):
            arg, pos = tokens[pos][1], pos + 1
        if pos >= len(tokens):
            raise SystemExit("the YANG module ends inside '%s'" % keyword)
        if tokens[pos] == ";":
            out.append((keyword, arg, []))
            pos += 1
        elif tokens[pos] == "{":
            subs, pos = yang_statements(tokens, pos + 1, depth + 1)
            out.append((keyword, arg, subs))
        else:
            raise SystemExit("unexpected %r after '%s' in the YANG module" % (tokens[pos], keyword))
    if depth:
        raise SystemExit("the YANG module ends inside a block")
    return out, pos


DATA_NODES = {"container", "list", "leaf", "leaf-list", "anydata", "anyxml"}


def yang_top_level(text):
    """The top-level data nodes of a YANG module (a top-level choice, uses of a
    grouping of the module itself and augment are resolved or refused)."""
    stmts, _ = yang_statements(yang_tokens(text))
    modules = [s for s in stmts if s[0] == "module"]
    if len(modules) != 1:
        raise SystemExit("expected one module statement")
    body = modules[0][2]
    groupings = {arg: subs for kw, arg, subs in body if kw == "grouping"}
    out = []

    def collect(subs):
        for kw, arg, children in subs:
            if kw in DATA_NODES:
                out.append(arg)
            elif kw == "uses":
                if arg not in groupings:
                    raise SystemExit("uses %s: not a grouping of this module" % arg)
                collect(groupings[arg])
            elif kw in ("choice", "case", "augment"):
                raise SystemExit("a top-level %s: this check does not read it; extend it" % kw)

    collect(body)
    return out


# --- the checks ------------------------------------------------------------------


def differences(what, code, page):
    out = []
    for x in sorted(set(code) - set(page)):
        out.append("%s %r is in the code but not in the man page" % (what, x))
    for x in sorted(set(page) - set(code)):
        out.append("%s %r is in the man page but not in the code" % (what, x))
    return out


def check_mcgwctl(page_text, code):
    commands, root_options = code
    problems = differences("command", commands, page_commands(page_text))
    page = page_commands(page_text)
    for path in sorted(set(commands) & set(page)):
        for d in differences("option", commands[path], page[path]):
            problems.append("'%s': %s" % (path, d))
    problems += differences("mcgwctl option", root_options, page_options(page_text))
    return problems


def check_mcgwd(page_text, code):
    return differences("option", code, page_options(page_text))


def check_yaml(page_text, code):
    return differences("top-level key", code, page_keys(page_text))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("page_kind", choices=["mcgwctl", "mcgwd", "yaml"])
    ap.add_argument("--page", required=True, help="the .scd source")
    ap.add_argument("--binary", help="mcgwctl or mcgwd")
    ap.add_argument("--yang", help="config/yang/mcgw.yang")
    a = ap.parse_args()
    with open(a.page) as f:
        page_text = f.read()

    if a.page_kind == "mcgwctl":
        code = cli_commands(a.binary)
        check, item_sections = check_mcgwctl, ["COMMANDS", "OPTIONS"]
        print("mcgwctl defines %d commands: %s" % (len(code[0]), ", ".join(sorted(code[0]))))
    elif a.page_kind == "mcgwd":
        code = help_of(a.binary, [])[0]
        check, item_sections = check_mcgwd, ["OPTIONS"]
        print("mcgwd --help lists: %s" % " ".join(sorted(code)))
    else:
        with open(a.yang) as f:
            code = yang_top_level(f.read())
        if len(code) != len(set(code)):
            raise SystemExit("the YANG module defines a top-level node twice: %s" % code)
        check, item_sections = check_yaml, ["TOP-LEVEL KEYS"]
        print("the YANG module's top-level nodes: %s" % " ".join(code))

    problems = check(page_text, code)
    if problems:
        print("%s differs from the code:" % a.page)
        for p in problems:
            print("  " + p)
        return 1

    # The check must see each item go missing.
    mutants = 0
    for section in item_sections:
        for i in range(len(items(sections(page_text)[section]))):
            mutant = without_item(page_text, section, i)
            mutants += 1
            if not check(mutant, code):
                print("the check passes with item %d of %s removed: it cannot fail" % (i, section))
                return 1
    print("%s matches the code; each of its %d items removed fails the check"
          % (a.page, mutants))
    return 0


if __name__ == "__main__":
    sys.exit(main())
