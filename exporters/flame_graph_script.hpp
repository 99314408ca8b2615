// The script and style inside every flame graph SVG (flame_graph.cpp): zoom, search,
// details. Plain ECMAScript 5 that reads only the document, no network. Each frame is
//   <g class="f" data-o="OFFSET" data-v="VALUE" data-d="DEPTH"><title>NAME (what, share; exact)</title>
//   <rect .../><text ...>label</text></g>
// where OFFSET and VALUE are exact integers of the folded table (the frame spans
// [OFFSET, OFFSET + VALUE) of the whole, data-total on the <svg>), so zoom and search
// compute with the table's numbers, never with rounded pixels.
#pragma once

namespace ringtrace::detail {

inline constexpr const char* kFlameGraphStyle = R"CSS(
text { font-family: Verdana, "DejaVu Sans", sans-serif; font-size: 12px; fill: #000; }
#title { text-anchor: middle; font-size: 17px; }
#subtitle, #merged { text-anchor: middle; fill: #333; }
#unzoom, #search { cursor: pointer; fill: #1a4d99; }
#matched { text-anchor: end; }
.f { cursor: pointer; }
.f text { pointer-events: none; }
.f:hover rect { stroke: #000; stroke-width: 0.5; }
.hide { display: none; }
.parent { opacity: 0.5; }
)CSS";

inline constexpr const char* kFlameGraphScript = R"JS(
"use strict";
var svg, frames, details, matched, unzoomButton, searchButton, width, pad, whole, unit;
function init() {
  svg = document.documentElement;
  frames = document.getElementById("frames");
  details = document.getElementById("details");
  matched = document.getElementById("matched");
  unzoomButton = document.getElementById("unzoom");
  searchButton = document.getElementById("search");
  width = +svg.getAttribute("data-width");
  pad = +svg.getAttribute("data-pad");
  whole = +svg.getAttribute("data-total");
  unit = svg.getAttribute("data-unit");
  frames.addEventListener("mouseover", function (e) {
    var g = frameOf(e.target);
    if (g) details.textContent = g.querySelector("title").textContent;
  });
  frames.addEventListener("mouseout", function () { details.textContent = " "; });
  frames.addEventListener("click", function (e) {
    var g = frameOf(e.target);
    if (g) zoom(g);
  });
  unzoomButton.addEventListener("click", unzoom);
  searchButton.addEventListener("click", askSearch);
  window.addEventListener("keydown", function (e) {
    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {
      e.preventDefault();
      askSearch();
    } else if (e.key === "Escape") {
      unzoom();
      search("");
    }
  });
}
function frameOf(node) {
  for (; node && node !== frames; node = node.parentNode) {
    if (node.classList && node.classList.contains("f")) return node;
  }
  return null;
}
function nameOf(g) {
  var t = g.querySelector("title").textContent;
  return t.substring(0, t.lastIndexOf(" ("));
}
function num(g, key) { return +g.getAttribute("data-" + key); }
function thousands(n) { return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ","); }
// The frame's label, cut to its width (about 7 px a character at 12 px Verdana).
function fit(g) {
  var r = g.querySelector("rect"), t = g.querySelector("text");
  var chars = Math.floor((+r.getAttribute("width") - 6) / 7), name = Array.from(nameOf(g));
  t.setAttribute("x", (+r.getAttribute("x") + 3).toFixed(2));
  if (chars < 3) t.textContent = "";
  else t.textContent = name.length <= chars ? name.join("") : name.slice(0, chars - 2).join("") + "..";
}
// Draws frame g as the span [from, from + span) of the whole filled the picture's width.
function place(g, from, span) {
  var r = g.querySelector("rect"), inner = width - 2 * pad;
  var x = Math.max(num(g, "o") - from, 0), w = Math.min(num(g, "v"), span - x);
  r.setAttribute("x", (pad + x / span * inner).toFixed(2));
  r.setAttribute("width", (w / span * inner).toFixed(2));
  fit(g);
}
function zoom(z) {
  var o0 = num(z, "o"), v0 = num(z, "v"), d0 = num(z, "d"), all = frames.children;
  for (var i = 0; i < all.length; i++) {
    var g = all[i], o = num(g, "o"), v = num(g, "v"), d = num(g, "d");
    g.classList.remove("hide");
    g.classList.remove("parent");
    if (d >= d0 && o >= o0 && o + v <= o0 + v0) {
      place(g, o0, v0);  // the zoomed frame and what is above it
    } else if (d < d0 && o <= o0 && o + v >= o0 + v0) {
      place(g, o0, v0);  // its parents, faded
      g.classList.add("parent");
    } else {
      g.classList.add("hide");
    }
  }
  unzoomButton.classList.remove("hide");
}
function unzoom() {
  var all = frames.children;
  for (var i = 0; i < all.length; i++) {
    all[i].classList.remove("hide");
    all[i].classList.remove("parent");
    place(all[i], 0, whole);
  }
  unzoomButton.classList.add("hide");
}
function askSearch() {
  var term = window.prompt("Search frames (a regular expression; empty: clear)", "");
  if (term !== null) search(term);
}
// Highlights the frames whose name matches `term` and says their share of the whole:
// the values of the outermost matches (a match above another adds nothing), exact.
function search(term) {
  var re = null, all = frames.children, spans = [];
  if (term) {
    try { re = new RegExp(term); } catch (e) { matched.textContent = "not a regular expression: " + term; return; }
  }
  for (var i = 0; i < all.length; i++) {
    var g = all[i], r = g.querySelector("rect");
    if (re && re.test(nameOf(g))) {
      if (!r.hasAttribute("data-fill")) r.setAttribute("data-fill", r.getAttribute("fill"));
      r.setAttribute("fill", "rgb(230,0,230)");
      g.classList.add("match");
      spans.push([num(g, "o"), num(g, "v")]);
    } else if (r.hasAttribute("data-fill")) {
      r.setAttribute("fill", r.getAttribute("data-fill"));
      r.removeAttribute("data-fill");
      g.classList.remove("match");
    }
  }
  if (!re) { matched.textContent = " "; return; }
  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });
  var sum = 0, end = 0;
  for (var k = 0; k < spans.length; k++) {
    if (spans[k][0] >= end) { sum += spans[k][1]; end = spans[k][0] + spans[k][1]; }
  }
  matched.setAttribute("data-value", String(sum));
  matched.textContent = "Matched " + term + ": " + (whole > 0 ? (sum / whole * 100).toFixed(2) : "0.00") + "% (" +
      thousands(sum) + " " + unit + " of " + thousands(whole) + ")";
}
)JS";

}  // namespace ringtrace::detail
