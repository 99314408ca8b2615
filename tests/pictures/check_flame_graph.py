#!/usr/bin/env python3
"""The flame graphs of make_pictures.sh, parsed as XML, against the folded stacks of the
same recording (every frame's value and width) and against the program's own bytes.

  check_flame_graph.py DIR

For a folded file, the frame of a stack prefix P is worth the sum of the values of the
lines that start with P. The picture must draw exactly the prefixes worth at least 0.1%
of the whole (and whose parents are drawn), each with that value (data-v, exact), its
width value / whole * 1180 px, its left edge where the siblings before it (in name order)
end, its title saying the value and share; the note must count the frames merged away.
"""
import json
import os
import re
import sys
import xml.etree.ElementTree as ET

SVG = '{http://www.w3.org/2000/svg}'
INNER = 1180
failures = 0


def check(ok, message):
    global failures
    if not ok:
        failures += 1
        print('FAIL: ' + message, file=sys.stderr)


def thousands(n):
    return f'{n:,}'


def read_folded(path):
    lines = []
    for line in open(path, encoding='utf-8').read().splitlines():
        if line:
            stack, value = line.rsplit(' ', 1)
            lines.append((tuple(stack.split(';')), int(value)))
    return lines


def prefix_values(lines):
    values = {(): 0}
    for frames, value in lines:
        values[()] += value
        for k in range(1, len(frames) + 1):
            values[frames[:k]] = values.get(frames[:k], 0) + value
    return values


def frames_of(svg_path):
    """Each frame with its stack, rebuilt from the picture alone (depth and offsets)."""
    root = ET.parse(svg_path).getroot()
    frames = []
    for g in root.iter(SVG + 'g'):
        if g.get('class') != 'f':
            continue
        title = g.find(SVG + 'title').text
        rect = g.find(SVG + 'rect')
        frames.append({'name': title[:title.rfind(' (')], 'title': title, 'o': int(g.get('data-o')),
                       'v': int(g.get('data-v')), 'd': int(g.get('data-d')), 'x': float(rect.get('x')),
                       'w': float(rect.get('width')), 'y': float(rect.get('y'))})
    frames.sort(key=lambda f: (f['d'], f['o']))
    for f in frames:
        if f['d'] == 0:
            f['stack'] = ()
            continue
        parents = [p for p in frames if p['d'] == f['d'] - 1 and p['o'] <= f['o'] and f['o'] + f['v'] <= p['o'] + p['v']
                   and 'stack' in p]
        check(len(parents) == 1, f'{svg_path}: frame {f["title"]} has {len(parents)} parents')
        f['stack'] = parents[0]['stack'] + (f['name'],) if parents else ('?',)
    return root, frames


def check_against_folded(svg_path, folded_path, unit, icicle):
    lines = read_folded(folded_path)
    values = prefix_values(lines)
    whole = values[()]
    root, frames = frames_of(svg_path)
    check(int(root.get('data-total')) == whole, f'{svg_path}: data-total {root.get("data-total")}, folded {whole}')
    drawn = {f['stack']: f for f in frames}
    check(len(drawn) == len(frames), f'{svg_path}: a stack drawn twice')
    expected = {p for p, v in values.items()
                if v > 0 and v >= 0.001 * whole and all(values[p[:k]] >= 0.001 * whole for k in range(len(p)))}
    check(set(drawn) == expected, f'{svg_path}: {len(drawn)} frames drawn, {len(expected)} expected; '
          f'extra {sorted(set(drawn) - expected)[:3]}, missing {sorted(expected - set(drawn))[:3]}')
    for stack, f in drawn.items():
        v = values.get(stack)
        check(f['v'] == v, f'{svg_path}: {";".join(stack)} is {f["v"]}, the folded file {v}')
        if v is None:
            continue
        # Siblings in name order, from the parent's left edge.
        parent = stack[:-1]
        before = sum(values[p] for p in values if len(p) == len(stack) and p[:-1] == parent and stack and
                     p[-1] < stack[-1])
        start = drawn[parent]['o'] + before if stack else 0
        check(f['o'] == start, f'{svg_path}: {";".join(stack)} starts at {f["o"]}, expected {start}')
        check(abs(f['w'] - v / whole * INNER) <= 0.006, f'{svg_path}: {";".join(stack)} {f["w"]} px wide')
        check(abs(f['x'] - (10 + start / whole * INNER)) <= 0.006, f'{svg_path}: {";".join(stack)} at {f["x"]} px')
        share = f'{v / whole * 100:.2f}%'
        check(f['title'].endswith(f', {share}; {thousands(v)} {unit})'), f'{svg_path}: title {f["title"]}')
    # Roots at the bottom (flame) or at the top (icicle).
    by_depth = sorted(frames, key=lambda f: f['d'])
    ys = [f['y'] for f in by_depth]
    check(ys == sorted(ys, reverse=not icicle), f'{svg_path}: frames are not {"top-down" if icicle else "bottom-up"}')
    # The note counts every frame not drawn and the share of the merged subtrees.
    hidden = [p for p in values if p and p not in drawn and values[p] > 0]
    merged = sum(values[p] for p in hidden if p[:-1] in drawn)
    note = ''.join(t.text or '' for t in root.iter(SVG + 'text') if t.get('id') == 'merged')
    if hidden:
        m = re.match(r'([\d,]+) frames under 0\.1% of the whole \(([\d.]+)% of it\)', note)
        check(m is not None and int(m.group(1).replace(',', '')) == len(hidden) and
              abs(float(m.group(2)) - merged / whole * 100) <= 0.0051,
              f'{svg_path}: note "{note}", expected {len(hidden)} frames, {merged / whole * 100:.2f}%')
    else:
        check(note == '', f'{svg_path}: note "{note}" with no frame merged')
    return drawn


def main():
    z = os.path.join(sys.argv[1], 'zones')
    expected = json.load(open(os.path.join(z, 'expected.json')))
    check_against_folded(os.path.join(z, 'flame.svg'), os.path.join(z, 'run.folded'), 'ns', False)
    check_against_folded(os.path.join(z, 'icicle.svg'), os.path.join(z, 'threads.folded'), 'ns', True)
    drawn = check_against_folded(os.path.join(z, 'memory.svg'), os.path.join(z, 'alloc.folded'), 'bytes', False)
    for stack, value in expected['alloc_bytes'].items():
        frame = drawn.get(tuple(stack.split(';')))
        check(frame is not None and frame['v'] == value,
              f'memory.svg: {stack} {frame and frame["v"]} bytes, the program allocated {value}')
    _, frames = frames_of(os.path.join(z, 'leaks.svg'))
    leaks = {f['stack']: f['v'] for f in frames}
    for stack, value in expected['leaked_bytes'].items():
        check(leaks.get(tuple(stack.split(';'))) == value,
              f'leaks.svg: {stack} {leaks.get(tuple(stack.split(";")))} bytes, the program kept {value}')
    check(leaks.get(()) == sum(v for s, v in leaks.items() if len(s) == 1), 'leaks.svg: the root is not its children')
    if failures:
        print(f'flame graphs: {failures} check(s) failed', file=sys.stderr)
        sys.exit(1)
    print('flame graphs: all checks passed')


main()
