'use strict';
// The flame graphs hotscope draws (`hotscope flame`, `hotscope report`; docs/diff-and-report.md):
// every <svg class="hotscope-flame"> on the page made interactive. Each frame is a
// <g class="frame"> whose data-start and data-value are in the profile's unit (ns or bytes), so
// a zoom places frames exactly: click a frame to fit it to the width (its callers stay, faded,
// below it; frames outside it hide), "Reset Zoom" to go back; "Search" (or Ctrl-F on a graph
// opened alone) highlights the frames whose name matches a regular expression and shows their
// share; hovering a frame shows its tooltip (name, value, share) at the bottom.
(function () {
  const HIGHLIGHT = 'rgb(230,0,230)';

  function setup(svg) {
    if (svg.dataset.ready) return;
    svg.dataset.ready = 'yes';
    const width = Number(svg.dataset.width);
    const margin = Number(svg.dataset.margin);
    const charWidth = Number(svg.dataset.charWidth);
    const frames = [...svg.querySelectorAll('g.frame')].map((g) => ({
      g,
      rect: g.querySelector('rect'),
      text: g.querySelector('text'),
      name: g.dataset.name,
      title: g.querySelector('title').textContent,
      start: Number(g.dataset.start),
      value: Number(g.dataset.value),
      depth: Number(g.dataset.depth),
    }));
    if (frames.length === 0) return;
    const root = frames.reduce((a, f) => (f.depth < a.depth ? f : a));
    const total = root.value;
    const details = svg.querySelector('.hf-details');
    const matched = svg.querySelector('.hf-matched');
    const resetZoom = svg.querySelector('.hf-reset-zoom');
    const searchButton = svg.querySelector('.hf-search');

    const label = (name, w) => {
      const fits = Math.floor((w - 6) / charWidth);
      if (fits < 3) return '';
      return name.length <= fits ? name : `${name.slice(0, fits - 2)}..`;
    };
    const place = (f, x, w) => {
      f.rect.setAttribute('x', x.toFixed(2));
      f.rect.setAttribute('width', w.toFixed(2));
      f.text.setAttribute('x', (x + 3).toFixed(2));
      f.text.textContent = label(f.name, w);
    };

    function zoom(target) {
      const end = target.start + target.value;
      for (const f of frames) {
        const ancestor = f.depth < target.depth && f.start <= target.start && f.start + f.value >= end;
        const inside = f.depth >= target.depth && f.start >= target.start && f.start + f.value <= end;
        f.g.classList.toggle('hf-hidden', !ancestor && !inside);
        f.g.classList.toggle('hf-ancestor', ancestor);
        if (ancestor) place(f, margin, width);
        else if (inside) place(f, margin + (f.start - target.start) / target.value * width, f.value / target.value * width);
      }
      resetZoom.classList.toggle('hf-hidden', target === root);
    }

    let searching = false;
    function search(term) {
      let pattern = null;
      try {
        pattern = new RegExp(term);
      } catch (e) {
        pattern = null; // not a regular expression: a plain substring
      }
      const hits = frames.filter((f) => (pattern ? pattern.test(f.name) : f.name.includes(term)));
      for (const f of frames) f.rect.setAttribute('fill', hits.includes(f) ? HIGHLIGHT : f.g.dataset.fill);
      // The union of the matched frames' ranges: a frame inside a matched one counts once.
      const ranges = hits.map((f) => [f.start, f.start + f.value]).sort((a, b) => a[0] - b[0] || b[1] - a[1]);
      let covered = 0;
      let reach = -1;
      for (const [start, stop] of ranges) {
        if (stop <= reach) continue;
        covered += stop - Math.max(start, reach);
        reach = stop;
      }
      searching = true;
      matched.textContent = `Matched: ${(100 * covered / total).toFixed(2)}% (${hits.length} frames)`;
      searchButton.textContent = 'Reset Search';
    }
    function clearSearch() {
      for (const f of frames) f.rect.setAttribute('fill', f.g.dataset.fill);
      searching = false;
      matched.textContent = '';
      searchButton.textContent = 'Search';
    }
    function askAndSearch() {
      const term = window.prompt('Search frames (a regular expression)', '');
      if (term) search(term);
    }

    for (const f of frames) {
      f.g.addEventListener('click', () => zoom(f));
      f.g.addEventListener('mouseover', () => { details.textContent = f.title; });
      f.g.addEventListener('mouseout', () => { details.textContent = ' '; });
    }
    resetZoom.addEventListener('click', () => zoom(root));
    searchButton.addEventListener('click', () => (searching ? clearSearch() : askAndSearch()));
    if (document.documentElement === svg) {
      window.addEventListener('keydown', (e) => {
        if ((e.ctrlKey || e.metaKey) && e.key === 'f') {
          e.preventDefault();
          askAndSearch();
        }
      });
    }
  }

  document.querySelectorAll('svg.hotscope-flame').forEach(setup);
})();
