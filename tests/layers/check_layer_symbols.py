#!/usr/bin/env python3
"""Checks the layers' edges at link time.

Usage: check_layer_symbols.py <manifest>

The manifest (written by tests/layers/CMakeLists.txt) lists each layer (an OBJECT
library), the layers it USES and its object files. A symbol an object leaves undefined
must be defined (strongly: nm types T, D, B, R) in its own layer, in a layer it uses, or
nowhere in the project (the C and C++ libraries, zlib, libdw). A reference to a symbol
another layer defines, across an edge the layer does not declare, is an error: the
public headers declare functions of every layer, so an include check alone cannot see
it. Weak definitions (inline functions, templates, vtables) are in every object that
uses them and attribute to no layer.
"""
import subprocess
import sys


def read_manifest(path):
    layers = {}
    current = None
    with open(path) as f:
        for line in f:
            key, _, value = line.rstrip("\n").partition(" ")
            if key == "layer":
                current = value
                layers[current] = {"uses": [], "objects": []}
            elif key == "uses":
                layers[current]["uses"] = [u for u in value.split(";") if u]
            elif key == "objects":
                layers[current]["objects"] = [o for o in value.split(";") if o]
    return layers


def symbols(objects):
    """(defined, undefined): symbol -> first object, from `nm -P` of the objects."""
    defined, undefined = {}, {}
    out = subprocess.run(["nm", "-P", "-A", *objects], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        # "<object>: <symbol> <type> [value size]"
        head, _, rest = line.partition(": ")
        fields = rest.split()
        if len(fields) < 2:
            continue
        name, kind = fields[0], fields[1]
        if kind in "TDBR":
            defined.setdefault(name, head)
        elif kind == "U":
            undefined.setdefault(name, head)
    return defined, undefined


def demangle(name):
    try:
        return subprocess.run(["c++filt", name], check=True, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return name


def main():
    layers = read_manifest(sys.argv[1])
    owner = {}
    refs = {}
    for name, layer in layers.items():
        defined, undefined = symbols(layer["objects"])
        for sym in defined:
            owner.setdefault(sym, name)
        refs[name] = undefined
    errors = []
    for name, undefined in refs.items():
        allowed = {name, *layers[name]["uses"]}
        for sym, obj in sorted(undefined.items()):
            home = owner.get(sym)
            if home is not None and home not in allowed:
                errors.append(f"{name} -> {home}: {obj.rsplit('/', 1)[-1]} references {demangle(sym)}")
    for line in errors:
        print(line)
    checked = sum(len(u) for u in refs.values())
    if errors:
        print(f"{len(errors)} references across undeclared edges (docs/architecture.md, Layers)")
        return 1
    print(f"{len(layers)} layers, {checked} undefined references checked: every edge declared")
    return 0


if __name__ == "__main__":
    sys.exit(main())
