"""Print the archive paths of Debian packages and of everything they depend on, each
after its SHA-256 as the index gives it (`sha256sum -c`'s format).

    python3 scripts/debian-closure.py PACKAGES.xz [PACKAGES.xz ...] -- NAME [NAME ...]

Each `Packages.xz` is a suite's index (a package is taken from the first index that has
it); dependencies are followed through `Depends` and `Pre-Depends`, the first of any
alternatives, and virtual packages through `Provides`. Packages that no program loads
(the packaging tools, shells, perl, debconf) are left out. For scripts/lavapipe-coop.sh.
"""

import lzma
import sys

NEVER_LOADED = {
    "bash", "coreutils", "dash", "debconf", "debianutils", "dpkg", "libc-bin",
    "perl-base", "tar", "sensible-utils", "usr-is-merged", "base-files",
}


def index(path):
    """The packages of one index, by name: a dict of each one's fields."""
    packages = {}
    for stanza in lzma.open(path, "rt").read().split("\n\n"):
        fields, key = {}, None
        for line in stanza.splitlines():
            if line.startswith((" ", "\t")) and key:
                fields[key] += line
            elif ":" in line:
                key, value = line.split(":", 1)
                fields[key] = value.strip()
        if "Package" in fields:
            packages.setdefault(fields["Package"], fields)
    return packages


def main(argv):
    split = argv.index("--")
    indexes = [index(path) for path in argv[:split]]
    providers = {}
    for packages in reversed(indexes):
        for name, fields in packages.items():
            for provided in fields.get("Provides", "").split(","):
                provided = provided.strip().split(" ")[0]
                if provided:
                    providers[provided] = name
    wanted, seen, paths = list(argv[split + 1:]), set(), []
    while wanted:
        name = wanted.pop()
        if name in seen or name in NEVER_LOADED:
            continue
        seen.add(name)
        fields = next((p[name] for p in indexes if name in p), None)
        if fields is None:
            if name not in providers:
                sys.exit(f"debian-closure: no package {name} in the indexes")
            wanted.append(providers[name])
            continue
        paths.append(f'{fields["SHA256"]}  {fields["Filename"]}')
        depends = fields.get("Pre-Depends", "") + "," + fields.get("Depends", "")
        for dependency in depends.split(","):
            first = dependency.split("|")[0].strip()
            if first:
                wanted.append(first.split(" ")[0].split(":")[0])
    print("\n".join(paths))


if __name__ == "__main__":
    main(sys.argv[1:])
