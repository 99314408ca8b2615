#!/usr/bin/env python3
"""The call graphs of make_pictures.sh's recordings, checked against the pstats file of
the same recording (read with Python's pstats module), the programs' own counts and
Graphviz.

  check_call_graph.py DIR

- Every .dot file goes through `dot -Tsvg` (Graphviz parses it).
- The boxes drawn (the SVG Graphviz made) are the pstats functions whose cumtime is at
  least 0.5% of the whole, as gprof2dot prunes: whole = max(sum of tottime, largest
  cumtime); each box says name, cumtime / whole, (tottime / sum of tottime), cumtime,
  ncalls; each arrow the edge's cumtime / whole and its calls, kept at 0.1%.
- Calls equal what the programs counted themselves.
- Box colors are gprof2dot's temperature scale, computed here with colorsys.
"""
import colorsys
import json
import os
import pstats
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

SVG = '{http://www.w3.org/2000/svg}'
failures = 0


def check(ok, message):
    global failures
    if not ok:
        failures += 1
        print('FAIL: ' + message, file=sys.stderr)


def dot_to_svg(dot_file):
    """Graphviz parses and draws the file."""
    run = subprocess.run(['dot', '-Tsvg', dot_file], capture_output=True, text=True)
    check(run.returncode == 0 and '</svg>' in run.stdout, f'dot -Tsvg {dot_file}: {run.returncode} {run.stderr[:300]}')


def drawn(svg_file):
    """Boxes {node id: label lines} and arrows {(from id, to id): label lines} as drawn."""
    root = ET.parse(svg_file).getroot()
    nodes, edges = {}, {}
    for g in root.iter(SVG + 'g'):
        kind = g.get('class')
        title = g.find(SVG + 'title')
        texts = [t.text or '' for t in g.iter(SVG + 'text')]
        if kind == 'node':
            nodes[title.text] = texts
        elif kind == 'edge':
            a, b = title.text.split('->')
            edges[(a, b)] = texts
    return nodes, edges


def dot_colors(dot_file):
    text = open(dot_file, encoding='utf-8').read()
    return dict(re.findall(r'^ +(\w+) \[color="(#[0-9a-f]{6})"', text, re.M))


def temperature(weight):
    """gprof2dot's scale: HSL from (2/3, 0.8, 0.25) at 0 to (0, 1, 0.5) at 1."""
    w = min(max(weight, 0.0), 1.0)
    r, g, b = colorsys.hls_to_rgb(2.0 / 3.0 * (1 - w), 0.25 + 0.25 * w, 0.8 + 0.2 * w)
    return tuple(round(c * 255) for c in (r, g, b))


def close_color(hex_color, expected):
    got = tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return all(abs(a - b) <= 1 for a, b in zip(got, expected))


def seconds_of(text):
    """'26.23 ms' -> (seconds, the half unit of its last digit)."""
    number, unit = text.split(' ')
    scale = {'ns': 1e-9, 'us': 1e-6, 'ms': 1e-3, 's': 1.0}[unit]
    decimals = len(number.split('.')[1]) if '.' in number else 0
    return float(number) * scale, 0.5 * 10 ** -decimals * scale


def percent_of(text):
    return float(text.strip('()%'))


def short_name(name):
    """Instrumented functions are named with their parameters: app::work(unsigned long)."""
    return name.split('(')[0]


def expected_graph(prof, node_threshold=0.005, edge_threshold=0.001, only=None):
    """What gprof2dot would draw from the pstats file (functions in `only`, if given)."""
    stats = pstats.Stats(prof).stats
    funcs = {k: v for k, v in stats.items() if v[1] > 0 and (only is None or short_name(k[2]) in only)}
    sum_tt = sum(v[2] for v in funcs.values())
    whole = max([sum_tt] + [v[3] for v in funcs.values()])
    ratio = lambda part, of: 1.0 if of == 0 else min(1.0, part / of)
    nodes = {k: (ratio(v[3], whole), ratio(v[2], sum_tt), v[3], v[1]) for k, v in funcs.items()}
    kept = {k for k, n in nodes.items() if n[0] >= node_threshold}
    edges, left_out_edges = {}, 0
    for callee, v in funcs.items():
        for caller, (nc, cc, tt, ct) in v[4].items():
            if caller not in funcs:
                continue
            if caller in kept and callee in kept and ratio(ct, whole) >= edge_threshold:
                edges[(caller, callee)] = (ratio(ct, whole), nc)
            else:
                left_out_edges += 1
    return nodes, kept, edges, len(nodes) - len(kept), left_out_edges


def check_graph(svg_file, dot_file, prof, counts, with_location, only=None, **thresholds):
    nodes, kept, edges, left_nodes, left_edges = expected_graph(prof, only=only, **thresholds)
    boxes, arrows = drawn(svg_file)
    colors = dot_colors(dot_file)
    by_name = {}
    for node_id, lines in boxes.items():
        by_name[lines[0]] = node_id
    check(sorted(by_name) == sorted(k[2] for k in kept),
          f'{svg_file}: boxes {sorted(by_name)}, expected {sorted(k[2] for k in kept)}')
    for key in kept:
        total, self_share, cumtime, ncalls = nodes[key]
        node_id = by_name.get(key[2])
        if node_id is None:
            continue
        lines = boxes[node_id]
        if with_location:
            check(lines[1] == f'{os.path.basename(key[0])}:{key[1]}', f'{svg_file}: {key[2]} location {lines[1]}')
            lines = lines[:1] + lines[2:]
        check(len(lines) == 5, f'{svg_file}: {key[2]} label {lines}')
        check(abs(percent_of(lines[1]) - total * 100) <= 0.0051, f'{svg_file}: {key[2]} total {lines[1]} vs {total:.6f}')
        check(lines[2].startswith('(') and abs(percent_of(lines[2]) - self_share * 100) <= 0.0051,
              f'{svg_file}: {key[2]} self {lines[2]} vs {self_share:.6f}')
        seconds, half = seconds_of(lines[3])
        check(abs(seconds - cumtime) <= half * 1.001, f'{svg_file}: {key[2]} total time {lines[3]} vs {cumtime} s')
        check(lines[4] == f'{ncalls}\u00d7', f'{svg_file}: {key[2]} calls {lines[4]} vs pstats {ncalls}')
        mine = counts['calls'].get(short_name(key[2]))
        check(mine is None or mine == ncalls, f'{svg_file}: {key[2]} called {ncalls} times, the program counted {mine}')
        check(close_color(colors.get(node_id, '#000000'), temperature(total)),
              f'{svg_file}: {key[2]} color {colors.get(node_id)} vs {temperature(total)}')
    drawn_edges = {(boxes[a][0], boxes[b][0]): lines for (a, b), lines in arrows.items()}
    want = {(a[2], b[2]): v for (a, b), v in edges.items()}
    check(sorted(drawn_edges) == sorted(want), f'{svg_file}: arrows {sorted(drawn_edges)}, expected {sorted(want)}')
    for pair, (share, ncalls) in want.items():
        lines = drawn_edges.get(pair)
        if lines is None:
            continue
        check(abs(percent_of(lines[0]) - share * 100) <= 0.0051, f'{svg_file}: arrow {pair} {lines[0]} vs {share:.6f}')
        check(lines[1] == f'{ncalls}\u00d7', f'{svg_file}: arrow {pair} calls {lines[1]} vs pstats {ncalls}')
        mine = counts['edges'].get(';'.join(short_name(n) for n in pair))
        check(mine is None or mine == ncalls, f'{svg_file}: arrow {pair} made {ncalls} calls, the program counted {mine}')
    drawn_short = {';'.join(short_name(n) for n in pair) for pair in drawn_edges}
    for edge in counts['edges']:
        ends = edge.split(';')
        if all(any(short_name(k[2]) == e for k in kept) for e in ends):
            check(edge in drawn_short, f"{svg_file}: the program's calls {edge} have no arrow")
    caption = open(dot_file, encoding='utf-8').read()
    check(f'left out: {left_nodes} boxes' in caption and f'and {left_edges} arrows' in caption,
          f'{svg_file}: the caption does not say {left_nodes} boxes and {left_edges} arrows were left out')
    return boxes


def check_per_thread(svg_file, dot_file, prof, counts):
    """One cluster per thread, each with shares of its own thread's time."""
    root = ET.parse(svg_file).getroot()
    # Graphviz writes clusters and boxes side by side; a box of cluster_K has id tKn...
    clusters = {g.find(SVG + 'title').text: (next(g.iter(SVG + 'text')).text or '')
                for g in root.iter(SVG + 'g') if g.get('class') == 'cluster'}
    boxes, _ = drawn(svg_file)
    # Each thread's functions are its own: its shares are of the pstats file's numbers
    # for those functions alone.
    for thread, names in (('main (tid ', {'main_loop', 'parse', 'lex', 'fib', 'tiny', 'hoard', 'churn'}),
                          ('worker (tid ', {'worker_loop', 'compress', 'crc'})):
        ids = [k for k, title in clusters.items() if title.startswith(thread)]
        check(len(ids) == 1, f'{svg_file}: clusters {sorted(clusters.values())}, one {thread}...) expected')
        if len(ids) != 1:
            continue
        prefix = 't' + ids[0].split('_')[1] + 'n'
        mine = {lines[0]: lines for node_id, lines in boxes.items() if node_id.startswith(prefix)}
        nodes, kept, _, _, _ = expected_graph(prof, only=names)
        check(sorted(mine) == sorted(k[2] for k in kept), f'{svg_file}: {thread}: boxes {sorted(mine)}')
        boxes_here = mine
        for key in kept:
            lines = boxes_here.get(key[2])
            check(lines is not None, f'{svg_file}: no box {key[2]}')
            if lines is None:
                continue
            check(abs(percent_of(lines[1]) - nodes[key][0] * 100) <= 0.0051,
                  f'{svg_file}: {key[2]} thread share {lines[1]} vs {nodes[key][0]:.6f}')
            check(lines[4] == f"{counts['calls'][key[2]]}\u00d7", f'{svg_file}: {key[2]} calls {lines[4]}')


def main():
    work = sys.argv[1]
    z, f = os.path.join(work, 'zones'), os.path.join(work, 'functions')
    for dot_file in (os.path.join(z, n) for n in ('calls.dot', 'threads.dot', 'everything.dot')):
        dot_to_svg(dot_file)
    dot_to_svg(os.path.join(f, 'calls.dot'))
    dot_to_svg(os.path.join(work, 'nodot', 'calls.dot'))
    zone_counts = json.load(open(os.path.join(z, 'expected.json')))
    prof = os.path.join(z, 'run.prof')
    boxes = check_graph(os.path.join(z, 'calls.svg'), os.path.join(z, 'calls.dot'), prof, zone_counts, False)
    check('tiny' not in {lines[0] for lines in boxes.values()}, 'calls.svg: "tiny" (far below 0.5%) has a box')
    # Thresholds 0: every function and arrow, drawn here by dot from the .dot file.
    everything = os.path.join(z, 'everything.svg')
    subprocess.run(['dot', '-Tsvg', os.path.join(z, 'everything.dot'), '-o', everything], check=True)
    boxes = check_graph(everything, os.path.join(z, 'everything.dot'), prof, zone_counts, False, node_threshold=0,
                        edge_threshold=0)
    check({lines[0] for lines in boxes.values()} == set(zone_counts['calls']),
          f'everything.svg: boxes {sorted(lines[0] for lines in boxes.values())}, the program made {sorted(zone_counts["calls"])}')
    check_per_thread(os.path.join(z, 'threads.svg'), os.path.join(z, 'threads.dot'), prof, zone_counts)
    # The instrumented program, recorded by `ringtrace record --callgraph`: functions by
    # (file, line, name), each box with its file and line.
    function_counts = json.load(open(os.path.join(f, 'expected.json')))
    boxes = check_graph(os.path.join(f, 'calls.svg'), os.path.join(f, 'calls.dot'), os.path.join(f, 'run.prof'),
                        function_counts, True)
    names = {short_name(lines[0]) for lines in boxes.values()}
    check(set(function_counts['calls']) <= names, f'functions: boxes {sorted(names)}')
    if failures:
        print(f'call graphs: {failures} check(s) failed', file=sys.stderr)
        sys.exit(1)
    print('call graphs: all checks passed')


main()
