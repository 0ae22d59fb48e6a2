// The one script of report.html: a card filter and the step-by-step strip under the heat map.
// Static text: it reads only generated data (label letters, ranks, step numbers) from the page
// and never builds markup from strings; without it the page still works (cells link to cards).
#include "report/html_report_parts.h"

namespace truffld::diagnose::report {

namespace {

constexpr char kScriptText[] = R"JS(
(function () {
  'use strict';
  var doc = document;
  var filter = doc.getElementById('card-filter');
  var cards = Array.prototype.slice.call(doc.querySelectorAll('section.card'));
  if (filter && cards.length) {
    var count = doc.getElementById('card-count');
    filter.hidden = false;
    filter.addEventListener('input', function () {
      var phrase = filter.value.toLowerCase().replace(/\s+/g, ' ').trim();
      var shown = 0;
      cards.forEach(function (c) {
        var ok = !phrase || c.textContent.toLowerCase().replace(/\s+/g, ' ').indexOf(phrase) >= 0;
        c.hidden = !ok;
        if (ok) shown += 1;
      });
      count.textContent = shown + ' of ' + cards.length + ' cards shown';
    });
  }
  var data = doc.getElementById('unit-labels');
  var zoom = doc.getElementById('zoom');
  var heat = doc.getElementById('heatmap');
  if (!data || !zoom || !heat) return;
  var rows = data.textContent.split('\n').filter(Boolean).map(function (line) {
    var p = line.split(' ');
    return { view: p[0], rank: p[1], first: Number(p[2]), labels: p[3] || '' };
  });
  var lo = Number(data.getAttribute('data-lo')), hi = Number(data.getAttribute('data-hi'));
  var span = Number(zoom.getAttribute('data-span')) || 100;
  var NS = 'http://www.w3.org/2000/svg';
  var fill = { n: '#e4e4e4', i: '#56B4E9', a: '#D55E00' };
  var word = { n: 'normal', i: 'insufficient evidence', a: 'abnormal' };
  var start = lo;
  function el(name, attrs, parent) {
    var e = doc.createElementNS(NS, name);
    Object.keys(attrs).forEach(function (k) { e.setAttribute(k, String(attrs[k])); });
    parent.appendChild(e);
    return e;
  }
  function draw(from) {
    start = Math.max(lo, Math.min(from, hi - span + 1));
    var svg = zoom.querySelector('svg');
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var left = 120, cell = Math.max(4, Math.min(16, Math.floor(900 / span))), rowH = 14;
    svg.setAttribute('width', left + cell * span + 10);
    svg.setAttribute('height', rows.length * rowH + 24);
    rows.forEach(function (r, i) {
      var y = 2 + i * rowH;
      el('text', { x: 4, y: y + 11, 'font-size': 11 }, svg).textContent =
          (r.view === 'h' ? 'horizontal' : 'vertical') + ' rank ' + (r.rank === 'x' ? '-' : r.rank);
      for (var k = 0; k < span; k += 1) {
        var step = start + k, c = r.labels.charAt(step - r.first);
        if (!fill[c]) continue;
        var parent = c === 'a' ? el('a', { href: '#r' + r.rank + '-s' + step + '-' + r.view }, svg) : svg;
        var rect = el('rect', { x: left + k * cell, y: y, width: cell - 1, height: rowH - 2, fill: fill[c] }, parent);
        el('title', {}, rect).textContent = 'step ' + step + ': ' + word[c];
      }
    });
    var axisY = rows.length * rowH + 18;
    el('text', { x: left, y: axisY, 'font-size': 10 }, svg).textContent = String(start);
    el('text', { x: left + cell * span, y: axisY, 'font-size': 10, 'text-anchor': 'end' }, svg).textContent =
        String(Math.min(hi, start + span - 1));
    doc.getElementById('zoom-range').textContent =
        'steps ' + start + ' to ' + Math.min(hi, start + span - 1) + ' of ' + lo + ' to ' + hi;
    zoom.hidden = false;
  }
  var perBin = Number(heat.getAttribute('data-per-bin')) || 1;
  heat.addEventListener('click', function (ev) {
    var a = ev.target.closest ? ev.target.closest('a[data-s]') : null;
    if (!a) return;
    ev.preventDefault();
    draw(Number(a.getAttribute('data-s')) + Math.floor(perBin / 2) - Math.floor(span / 2));
    zoom.scrollIntoView({ block: 'nearest' });
  });
  zoom.addEventListener('click', function (ev) {
    var z = ev.target.getAttribute && ev.target.getAttribute('data-z');
    if (z) draw(start + Number(z) * span);
  });
  doc.documentElement.setAttribute('data-report-ready', String(Math.round(performance.now())));
})();
)JS";

}  // namespace

const std::string& Script() {
  static const std::string kScript = kScriptText;
  return kScript;
}

}  // namespace truffld::diagnose::report
